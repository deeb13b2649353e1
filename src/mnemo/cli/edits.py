"""A person's own changes to one memory: edit, forget, restore, pin, unpin, purge, approve, reject."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated

import typer
from rich.text import Text

from ..domain import Fact, Receipt
from . import output
from .options import FactId, Json
from .runtime import CliFailure, Session, parse_when, run

app = typer.Typer()

Reason = Annotated[str | None, typer.Option("--reason", "-r", help="Why, kept in the history.")]


def _apply(
    ctx: typer.Context,
    fact_id: str,
    json: bool,
    verb: str,
    change: Callable[[Session, str], Awaitable[Fact]],
    receipt: list[Receipt] | None = None,  # an erasure's, once `change` ran
    lingering: list[str] | None = None,  # why its text stays in a file a while
) -> None:
    async def work(s: Session) -> Fact:
        return await change(s, await s.full_id(fact_id))

    fact = run(ctx, work, fact_id=fact_id)
    if json:
        note = lingering[0] if lingering else None
        erased = {"receipt_id": receipt[0].id, "lingering": note} if receipt else {}
        output.emit_json({**output.fact_json(fact), **erased})
        return
    shown = output.ERASED if fact.purged else fact.text
    output.say(
        Text.assemble(
            (f"{verb}: ", "green"), (fact.id, "cyan"), f" (v{fact.version}, {fact.status})  ", shown
        )
    )
    if receipt:
        output.say(f"Receipt: {receipt[0].id} (mnemo receipts show {receipt[0].id})")
    output.lingering(lingering[0] if lingering else None)


@app.command()
def edit(
    ctx: typer.Context,
    fact_id: FactId,
    text: Annotated[str, typer.Argument(help="The corrected text.")],
    version: Annotated[
        int | None, typer.Option("--version", help="Refuse if the memory is no longer at this version.")
    ] = None,
    reason: Reason = None,
    json: Json = False,
) -> None:
    """Correct a memory in place: same id, the old text stays in its history."""
    _apply(
        ctx,
        fact_id,
        json,
        "Edited",
        lambda s, fid: s.memory.edit(s.view, fid, text, version=version, reason=reason),
    )


@app.command()
def end(
    ctx: typer.Context,
    fact_id: FactId,
    until: Annotated[
        datetime | None,
        typer.Argument(
            parser=parse_when, metavar="[DATE]", help="True until (ISO date or time, or now); none: no end."
        ),
    ] = None,
    json: Json = False,
) -> None:
    """Set, move or clear when a memory stops being true: past it, it is not recalled as true now
    (it stays, and is found for the time it held)."""
    verb = f"Ends {until.isoformat()}" if until else "No end"
    _apply(ctx, fact_id, json, verb, lambda s, fid: s.memory.update(s.view, fid, valid_to=until))


@app.command()
def keep(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """A memory on the stale list is still true: its clock starts again (mnemo review --stale)."""
    _apply(ctx, fact_id, json, "Kept", lambda s, fid: s.memory.keep(s.view, fid))


@app.command()
def forget(ctx: typer.Context, fact_id: FactId, reason: Reason = None, json: Json = False) -> None:
    """Retract a memory: no longer recalled, kept in the history (undo: mnemo restore)."""
    _apply(ctx, fact_id, json, "Forgotten", lambda s, fid: s.memory.retract(s.view, fid, reason=reason))


@app.command()
def restore(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """Bring back a retracted, superseded or rejected memory."""
    _apply(ctx, fact_id, json, "Restored", lambda s, fid: s.memory.restore(s.view, fid))


@app.command()
def pin(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """Always recall this memory."""
    _apply(ctx, fact_id, json, "Pinned", lambda s, fid: s.memory.pin(s.view, fid, True))


@app.command()
def unpin(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """Recall this memory only when it is relevant."""
    _apply(ctx, fact_id, json, "Unpinned", lambda s, fid: s.memory.pin(s.view, fid, False))


@app.command()
def approve(ctx: typer.Context, fact_id: FactId, json: Json = False) -> None:
    """Accept a candidate memory (see mnemo review)."""
    _apply(ctx, fact_id, json, "Approved", lambda s, fid: s.memory.approve(s.view, fid))


@app.command()
def reject(ctx: typer.Context, fact_id: FactId, reason: Reason = None, json: Json = False) -> None:
    """Turn down a candidate memory (see mnemo review)."""
    _apply(ctx, fact_id, json, "Rejected", lambda s, fid: s.memory.reject(s.view, fid, reason=reason))


MessageIds = Annotated[
    list[str] | None,
    typer.Option("--message", metavar="ID", help="Erase this message too (one the preview offers)."),
]
KeepIds = Annotated[
    list[str] | None,
    typer.Option("--keep-message", metavar="ID", help="Leave this message out (one the preview takes)."),
]


@app.command()
def purge(
    ctx: typer.Context,
    fact_id: FactId,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Really erase it.")] = False,
    reason: Reason = None,
    message: MessageIds = None,
    keep_message: KeepIds = None,
    other_agents: Annotated[
        bool, typer.Option("--other-agents", help="Erase the same text from your other agents' memories too.")
    ] = False,
    json: Json = False,
) -> None:
    """Erase a memory's text for good, here, in its whole history and in the messages it was
    learnt from or that say it (cannot be undone); prints the id of its signed receipt. Without
    --yes it shows each message it would erase, where it is and what it says."""
    receipt: list[Receipt] = []
    lingering: list[str] = []
    added, keep = message or [], set(keep_message or [])

    async def work(s: Session, fact_id: str) -> Fact:
        if not yes:
            fact = await s.memory.get(s.view, fact_id)
            shown = "its text, already erased" if fact.purged else f'"{fact.text}"'
            lines = []
            if not fact.purged:
                plan = await s.memory.erasure_plan(
                    s.view, fact_id, added, keep=keep, other_agents=other_agents
                )
                names: dict[str | None, str] = {
                    a.id: a.name for a in await s.memory.accounts.agents(s.user.id)
                }
                lines = output.plan_lines(plan, names)
            raise CliFailure(
                "\n".join(
                    [
                        f"Not purged. Purging erases {shown} from memory {fact_id} and from every event of "
                        "its history, and the text of the messages below; only the record that a purge "
                        "happened remains, it is never learnt again, and it cannot be undone. "
                        "To only stop recalling it, use mnemo forget. Run again with --yes to purge.",
                        *lines,
                    ]
                )
            )
        fact, made = await s.memory.purge(
            s.view, fact_id, reason=reason, message_ids=added, keep=keep, other_agents=other_agents
        )
        receipt.append(made)
        note = await s.memory.lingering()
        lingering.extend([note] if note else [])
        return fact

    _apply(ctx, fact_id, json, "Purged", work, receipt, lingering)
