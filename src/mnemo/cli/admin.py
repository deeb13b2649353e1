"""Agents, switches and the audit log: `mnemo agents …`, `mnemo settings …`, `mnemo audit …`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ..batch.export import event_record
from ..build import shown_url
from ..domain import Event, MemoryMode, ReviewPolicy
from . import output
from .options import Json, Limit
from .runtime import Session, database_file, run

agents = typer.Typer(help="The user's assistants (agents) and what they may read.", no_args_is_help=True)
settings = typer.Typer(help="Memory on/off, the review policy, the server mode.", no_args_is_help=True)
audit = typer.Typer(help="The hash-chained log of every change.", no_args_is_help=True)


# -- agents -------------------------------------------------------------------------


@agents.command("create")
def agents_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The agent's name, unique for the user.")],
    private: Annotated[
        bool, typer.Option("--private", help="The default assistant may not read its memories.")
    ] = False,
    reads_default: Annotated[
        bool, typer.Option("--reads-default", help="It reads the default assistant's memories too.")
    ] = False,
    json: Json = False,
) -> None:
    """Create an agent; use it with mnemo --agent NAME …"""

    async def work(s: Session):
        return await s.accounts.create_agent(s.user.id, name, private=private, reads_default=reads_default)

    agent = run(ctx, work, resolve_agent=False, creates=True)
    if json:
        output.emit_json(output.agent_json(agent))
    else:
        output.say(f"Created agent {agent.name} ({agent.id}).", "green")


@agents.command("list")
def agents_list(ctx: typer.Context, json: Json = False) -> None:
    """The user's agents."""

    async def work(s: Session):
        return s.agents

    found = run(ctx, work, resolve_agent=False)
    if json:
        output.emit_json([output.agent_json(a) for a in found])
    elif not found:
        output.say("No agents; memories belong to the default assistant (mnemo agents create NAME).")
    else:
        output.show(output.agents_table(found))


# -- settings -------------------------------------------------------------------------


class Switch(StrEnum):
    ON = "on"
    OFF = "off"
    DEFAULT = "default"


class OnOff(StrEnum):
    ON = "on"
    OFF = "off"


class ServerMode(StrEnum):
    DISABLED = MemoryMode.DISABLED.value
    ENABLED_DEFAULT_OFF = MemoryMode.ENABLED_DEFAULT_OFF.value
    ENABLED_DEFAULT_ON = MemoryMode.ENABLED_DEFAULT_ON.value
    NONE = "none"


async def _state(s: Session) -> dict[str, Any]:
    user = await s.accounts.user(s.user.name)
    mode = await s.accounts.server_mode()
    path = database_file(s.settings)
    return {
        "user": user.name,
        "memory_enabled": await s.accounts.memory_enabled(user.id),
        "user_switch": {True: "on", False: "off", None: "default"}[user.memory_enabled],
        "review_policy": str(user.review_policy),
        "record_recalls": user.record_recalls,
        "review_stale": user.review_stale,
        "sensitive_gate": user.gate.actions(),
        "recall_log_days": s.settings.recall_log_days,
        "server_mode": str(mode) if mode else None,
        "database": str(path) if path else shown_url(s.settings.database_url),
        "chat_model": s.memory.chat.model_name if s.memory.chat else None,
        "embedder": s.memory.embedder.model_name,
    }


def _show_state(state: dict[str, Any], json: bool) -> None:
    if json:
        output.emit_json(state)
        return
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column("setting", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    on = "on" if state["memory_enabled"] else "off"
    server_mode = state["server_mode"] or "none"
    rows = [
        ("user", state["user"]),
        ("memory", f"{on} (your switch: {state['user_switch']}; server mode: {server_mode})"),
        ("review policy", state["review_policy"]),
        (
            "recall log",
            f"{'on' if state['record_recalls'] else 'off'} (kept {state['recall_log_days']} days)",
        ),
        ("stale list", "on" if state["review_stale"] else "off"),
        ("sensitive-data gate", ", ".join(f"{k} {a}" for k, a in state["sensitive_gate"].items())),
        ("database", state["database"]),
        ("chat model", state["chat_model"] or "none: only explicit requests are learnt"),
        ("embedder", state["embedder"]),
    ]
    for name, value in rows:
        table.add_row(name, Text(str(value)))
    output.show(table)


@settings.command("show")
def settings_show(ctx: typer.Context, json: Json = False) -> None:
    """Whether memory is on for the user, and why."""
    _show_state(run(ctx, _state, resolve_agent=False), json)


@settings.command("memory")
def settings_memory(
    ctx: typer.Context,
    switch: Annotated[Switch, typer.Argument(help="on, off, or default (follow the server mode).")],
    json: Json = False,
) -> None:
    """Switch memory on or off for the user."""
    value = {Switch.ON: True, Switch.OFF: False, Switch.DEFAULT: None}[switch]

    async def work(s: Session):
        await s.accounts.set_user_switch(s.user.id, value)
        return await _state(s)

    _show_state(run(ctx, work, resolve_agent=False, creates=True), json)


@settings.command("recalls")
def settings_recalls(
    ctx: typer.Context,
    switch: Annotated[OnOff, typer.Argument(help="on, or off: record nothing and delete what was.")],
    json: Json = False,
) -> None:
    """Record which assistant recalled which memory, and when (shown on each memory's page)."""

    async def work(s: Session):
        await s.accounts.set_record_recalls(s.user.id, switch is OnOff.ON)
        return await _state(s)

    _show_state(run(ctx, work, resolve_agent=False, creates=True), json)


@settings.command("stale")
def settings_stale(
    ctx: typer.Context,
    switch: Annotated[OnOff, typer.Argument(help="on, or off: offer nothing on the stale list.")],
    json: Json = False,
) -> None:
    """Offer memories unheard for long on the "Still true?" list (mnemo review --stale)."""

    async def work(s: Session):
        await s.accounts.set_review_stale(s.user.id, switch is OnOff.ON)
        return await _state(s)

    _show_state(run(ctx, work, resolve_agent=False, creates=True), json)


@settings.command("policy")
def settings_policy(
    ctx: typer.Context,
    policy: Annotated[
        ReviewPolicy,
        typer.Argument(help="auto: learn directly; review: hold everything; guarded: hold the doubtful."),
    ],
    json: Json = False,
) -> None:
    """How learnt memories are accepted for the user."""

    async def work(s: Session):
        await s.accounts.set_review_policy(s.user.id, policy)
        return await _state(s)

    _show_state(run(ctx, work, resolve_agent=False, creates=True), json)


@settings.command("gate")
def settings_gate(
    ctx: typer.Context,
    choices: Annotated[
        list[str],
        typer.Argument(
            help="category=action, e.g. card=allow email=redact. Categories: credential, card,"
            " bank_account, government_id, phone, email; actions: block, redact, hold, allow."
        ),
    ],
    json: Json = False,
) -> None:
    """What the sensitive-data gate does with each category it finds in what is stored."""
    changes = {}
    for choice in choices:
        category, equals, action = choice.partition("=")
        if not equals:
            raise typer.BadParameter(f"{choice!r}: write category=action, e.g. card=allow")
        changes[category.strip()] = action.strip()

    async def work(s: Session):
        await s.accounts.set_gate(s.user.id, changes)
        return await _state(s)

    _show_state(run(ctx, work, resolve_agent=False, creates=True), json)


@settings.command("server-mode")
def settings_server_mode(
    ctx: typer.Context,
    mode: Annotated[ServerMode, typer.Argument(help="For every user; none: use MNEMO_MEMORY_MODE or on.")],
    json: Json = False,
) -> None:
    """Server-wide memory mode: disabled overrides everyone, otherwise it is the default."""
    value = None if mode is ServerMode.NONE else MemoryMode(mode.value)

    async def work(s: Session):
        await s.accounts.set_server_mode(value)
        return await _state(s)

    _show_state(run(ctx, work, resolve_agent=False, creates=True), json)


# -- audit ------------------------------------------------------------------------------


@audit.command("list")
def audit_list(
    ctx: typer.Context,
    limit: Limit = 50,
    json: Json = False,
) -> None:
    """The user's audit log, newest first: when, what, by whom, on which memory, and why."""

    async def work(s: Session) -> list[Event]:
        return (await s.memory.events(s.user.id))[::-1][:limit]

    events = run(ctx, work, resolve_agent=False)
    if json:
        output.emit_json([event_record(e) for e in events])
        return
    if not events:
        output.say("The audit log is empty.")
        return
    table = Table(box=None, padding=(0, 2, 0, 0))
    for column in ("when", "action", "actor", "memory", "reason"):
        table.add_column(column, no_wrap=column != "reason", overflow="fold")
    for e in events:
        table.add_row(
            output.minute(e.at),
            str(e.action),
            Text(output.printable(e.actor)),
            Text(e.fact_id, style="cyan"),
            Text(output.printable(e.reason or "")),
        )
    output.show(table)


@audit.command("verify")
def audit_verify(ctx: typer.Context, json: Json = False) -> None:
    """Check the user's audit log: every link of the chain and every event's content."""

    async def work(s: Session):
        return await s.memory.verify_audit(s.user.id)

    report = run(ctx, work, resolve_agent=False)
    if json:
        output.emit_json(output.audit_json(report))
    elif report.ok:
        output.say(f"ok, {report.events} events", "green")
    else:
        output.error(
            f"The audit log failed verification ({len(report.problems)} problems, {report.events} events):"
        )
        for problem in report.problems:
            output.error(f"  {problem}")
    if not report.ok:
        raise typer.Exit(1)
