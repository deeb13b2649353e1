"""The stored turns: each one's state, why (a category), and what it learnt, as fact ids."""

from __future__ import annotations

from typing import Annotated

import typer

from ..domain import FACT_KINDS, StoredTurn, TurnState, dropped_words, known_id
from ..schemas import TurnPublic
from . import output
from .options import Json, Limit, Offset
from .runtime import Session, run

turns = typer.Typer(help="Your stored turns and what each one learnt.", no_args_is_help=True)


def turn_json(turn: StoredTurn) -> dict:
    """A turn as GET /v1/turns/{id} answers it."""
    return TurnPublic.of(turn).model_dump(mode="json")


@turns.command("list")
def list_(
    ctx: typer.Context,
    state: Annotated[
        TurnState | None, typer.Option("--state", "-s", help="Only turns in this state.")
    ] = None,
    limit: Limit = 50,
    offset: Offset = 0,
    json: Json = False,
) -> None:
    """Stored turns, newest first: state, reason, and how many facts of each kind they touched."""

    async def work(s: Session) -> list[StoredTurn]:
        return await s.memory.turns(s.user.id, state=state, limit=limit, offset=offset)

    found = run(ctx, work)
    if json:
        output.emit_json([turn_json(t) for t in found])
        return
    if not found:
        output.say(f"No turns{f' ({state})' if state else ''}.")
        return
    output.show(output.turns_table(found))


@turns.command()
def show(
    ctx: typer.Context,
    turn_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="The turn's id (X-Mnemo-Turn), or a unique start of it (8 characters or more)."
        ),
    ],
    json: Json = False,
) -> None:
    """One turn: its state, why, the ids of the facts it touched, by kind, and what of the
    model's reply was dropped, and why."""

    async def work(s: Session) -> StoredTurn:
        return await s.memory.turn(s.user.id, known_id(await s.full_id(turn_id, "turn"), "turn"))

    turn = run(ctx, work)
    if json:
        output.emit_json(turn_json(turn))
        return
    lines = [
        f"turn      {turn.id}",
        f"state     {output.turn_state(turn)}" + (f" ({turn.reason})" if turn.reason else ""),
        f"stored    {output.minute(turn.created_at)}",
        f"attempts  {turn.attempts}",
    ]
    lines += [f"{kind:<9} {', '.join(turn.facts[kind])}" for kind in FACT_KINDS if turn.facts[kind]]
    if turn.dropped:  # what the model proposed that was not kept, and why (never its text)
        lines.append(f"dropped   {dropped_words(turn.dropped)}")
    output.stdout().print("\n".join(lines), highlight=False, soft_wrap=True)
