"""Reading memory and adding to it: add, search, list, show, history, review, remember."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.text import Text

from ..batch.export import event_record
from ..domain import Category, Status, StatusFilter, Turn, utcnow
from ..providers.base import ModelError, ModelUnavailable
from . import output
from .options import AsOf, FactId, Json, Limit, Offset
from .runtime import FAILED, Session, parse_when, run

app = typer.Typer()

EXPLICIT_ONLY = (
    "No chat model is configured (MNEMO_LLM_BASE_URL and MNEMO_LLM_MODEL), so only explicit "
    'requests such as "remember that …" are learnt.'
)


@app.command()
def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What to remember.")],
    category: Annotated[
        Category, typer.Option("--category", "-c", help="What kind of fact it is.")
    ] = Category.OTHER,
    pin: Annotated[bool, typer.Option("--pin", help="Always recall it.")] = False,
    valid_from: Annotated[
        datetime | None,
        typer.Option("--valid-from", parser=parse_when, metavar="DATE", help="True since (ISO date)."),
    ] = None,
    until: Annotated[
        datetime | None,
        typer.Option(
            "--until",
            parser=parse_when,
            metavar="DATE",
            help="True until (ISO date or time): not recalled past it.",
        ),
    ] = None,
    json: Json = False,
) -> None:
    """Remember TEXT (restating a memory you already have reinforces it)."""

    async def work(s: Session):
        fact = await s.memory.add(
            s.scope, text, category=category, pinned=pin, valid_from=valid_from, valid_to=until
        )
        if pin and not fact.pinned:  # a restated fact comes back reinforced, not pinned
            fact = await s.memory.pin(s.scope, fact.id)
        return fact

    fact = run(ctx, work, creates=True)
    if json:
        output.emit_json(output.fact_json(fact))
        return
    verb = f"Already remembered (mentioned {fact.mentions} times)" if fact.mentions > 1 else "Remembered"
    output.say(Text.assemble((f"{verb}: ", "green"), (fact.id, "cyan"), "  ", fact.text))


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Limit = 10,
    as_of: AsOf = None,
    json: Json = False,
) -> None:
    """What the assistant would recall for QUERY, best first, with why each came back."""

    async def work(s: Session):
        enabled = await s.accounts.memory_enabled(s.user.id)
        return enabled, await s.memory.recall(query, s.scope, as_of=as_of, limit=limit)

    enabled, hits = run(ctx, work)
    if json:
        output.emit_json([output.hit_json(rank, hit) for rank, hit in enumerate(hits, start=1)])
    elif not enabled:
        output.say(
            "Memory is off for this user, so nothing is recalled (mnemo settings memory on).", "yellow"
        )
    elif not hits:
        output.say("Nothing recalled.")
    else:
        output.show(output.hits_table(hits))


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[
        StatusFilter, typer.Option("--status", "-s", help="Which memories: by status, or all.")
    ] = StatusFilter.ACTIVE,
    limit: Limit = 50,
    offset: Offset = 0,
    as_of: AsOf = None,
    json: Json = False,
) -> None:
    """Memories, newest first (all agents' unless --agent is given)."""

    async def work(s: Session):
        facts = await s.memory.list(
            s.view, as_of=as_of, statuses=status.statuses(), limit=limit, offset=offset
        )
        return facts, s.agent_names

    facts, agent_names = run(ctx, work)
    if json:
        output.emit_json([output.fact_json(f) for f in facts])
    elif not facts:
        output.say(f"No memories ({status}).")
    else:
        output.show(output.facts_table(facts, agent_names))


@app.command()
def show(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """One memory, every field."""

    async def work(s: Session):
        return await s.memory.get(s.view, await s.full_id(fact_id)), s.agent_names

    fact, agent_names = run(ctx, work, fact_id=fact_id)
    if json:
        output.emit_json(output.fact_json(fact))
    else:
        output.stdout().print(output.fact_detail(fact, agent_names))


@app.command()
def history(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """Everything that happened to a memory, oldest first."""

    async def work(s: Session):
        full = await s.full_id(fact_id)
        return await s.memory.history(s.view, full), await s.memory.get(s.view, full)

    events, fact = run(ctx, work, fact_id=fact_id)
    if json:
        output.emit_json([event_record(e) for e in events])
    else:
        ended = fact.valid_to if fact.ended(utcnow()) else None
        output.show(output.history_table(events, ended_at=ended))


@app.command()
def review(
    ctx: typer.Context,
    limit: Limit = 50,
    stale: Annotated[
        bool,
        typer.Option(
            "--stale",
            help="Still true? Memories neither said again nor recalled for their category's time"
            " (mnemo keep ID / mnemo end ID now / mnemo purge ID).",
        ),
    ] = False,
    json: Json = False,
) -> None:
    """Candidate memories waiting for approval (mnemo approve / mnemo reject); with --stale, the
    memories unheard for long."""

    async def work(s: Session):
        if stale:
            return await s.memory.stale(s.view, limit=limit), s.agent_names, s.user.review_stale
        candidates = await s.memory.list(s.view, statuses=(Status.CANDIDATE,), limit=limit)
        return candidates, s.agent_names, True

    facts, agent_names, on = run(ctx, work)
    if json:
        output.emit_json([output.fact_json(f) for f in facts])
    elif not on:
        output.say("The stale list is off (mnemo settings stale on).")
    elif not facts:
        output.say("Nothing has gone unheard for long." if stale else "Nothing to review.")
    else:
        title = "Still true? Unheard for long" if stale else "Waiting for review"
        output.show(output.facts_table(facts, agent_names, title=title))


@app.command()
def remember(
    ctx: typer.Context,
    user_message: Annotated[str, typer.Option("--user-message", "-u", help="What the user said.")],
    assistant_message: Annotated[
        str | None, typer.Option("--assistant-message", "-a", help="What the assistant answered.")
    ] = None,
    json: Json = False,
) -> None:
    """Learn from one conversation turn, as an assistant would after replying."""

    async def work(s: Session):
        pairs = [("user", user_message)]
        if assistant_message is not None:
            pairs.append(("assistant", assistant_message))
        report = await s.memory.remember(Turn.of(s.scope, *pairs))
        return report, s.memory.chat is None

    report, explicit_only = run(ctx, work, creates=True)
    if json:
        output.emit_json(
            {
                "events": [event_record(e) for e in report.events],
                "held": report.held,
                "problems": list(report.problems),
                "skipped": report.skipped,
                "retry": report.retry,
                "failure": report.failure,
                "explicit_only": explicit_only,
            }
        )
    else:
        if explicit_only:
            output.say(EXPLICIT_ONLY, "yellow")
        if report.skipped:
            output.say(f"Nothing learnt: {report.skipped}.")
        elif not report.events and not report.problems:
            output.say("Nothing learnt from this turn.")
        for event in report.events:
            output.say(output.event_line(event))
        if report.held:
            output.say(f"{len(report.held)} held for review: mnemo review", "yellow")
        for problem in report.problems:
            output.error(f"problem: {problem}")
    if report.retry:
        if not json:
            output.error(
                f"{ModelUnavailable.code}: The model was unavailable; nothing was learnt."
                " Try the same turn again later."
            )
        raise typer.Exit(FAILED)
    if report.failure is not None:  # refused (a bad key, a bad request) or answered unreadably
        if not json:
            output.error(f"{ModelError.code}: The model failed ({report.failure}); nothing was learnt.")
        raise typer.Exit(FAILED)
