"""Your conversations: the list (found by words, assistant and date) and one read whole."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..domain import UNSET, ConversationSummary, ConversationView, conversation_id
from ..schemas import ConversationPublic, ConversationSummaryPublic
from . import output
from .admin import OnOff
from .options import Json, Limit, Offset
from .runtime import Session, parse_when, run

conversations = typer.Typer(help="Your conversations and what each one taught.", no_args_is_help=True)

When = Annotated[datetime | None, typer.Option(parser=parse_when, metavar="DATE", help="ISO date or time.")]


@conversations.command("list")
def list_(
    ctx: typer.Context,
    q: Annotated[
        str | None, typer.Option("--q", "-q", help="Only those with a message saying these words.")
    ] = None,
    since: When = None,
    until: When = None,
    limit: Limit = 50,
    offset: Offset = 0,
    json: Json = False,
) -> None:
    """Your conversations, newest first: when each began, how many messages, how it opened
    (with --agent NAME, only those had with that assistant)."""

    async def work(s: Session) -> tuple[list[ConversationSummary], dict[str, str]]:
        chosen = s.agent.id if s.agent is not None else UNSET
        page = await s.memory.conversation_list(
            s.user.id, q=q, agent=chosen, since=since, until=until, limit=limit, offset=offset
        )
        return page, s.agent_names

    found, names = run(ctx, work)
    if json:
        output.emit_json([ConversationSummaryPublic.of(c).model_dump(mode="json") for c in found])
        return
    if not found:
        output.say("No conversations.")
        return
    table = Table(box=None, padding=(0, 2, 0, 0))
    for column in ("began", "messages", "assistant", "opening", "id"):
        table.add_column(column, no_wrap=column != "opening", overflow="fold")
    for c in found:
        table.add_row(
            output.minute(c.created_at),
            str(c.messages),
            Text(names.get(c.agent_id, "a deleted assistant") if c.agent_id else "default"),
            Text(output.printable(c.opening or "")),
            Text(output.printable(c.id), style="cyan"),
        )
    output.show(table)


@conversations.command()
def show(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(metavar="ID", help="The conversation's id.")],
    json: Json = False,
) -> None:
    """One conversation: every message, and under each turn what it taught (memory ids)."""

    async def work(s: Session) -> ConversationView:
        return await s.memory.conversation(s.user.id, conversation_id(conversation))

    view = run(ctx, work, resolve_agent=False)
    if json:
        output.emit_json(ConversationPublic.of(view).model_dump(mode="json"))
        return
    closing = {t.message_ids[-1]: t for t in view.turns if t.message_ids}
    texts = {f.id: f.text for f in view.memories}
    lines = [
        f"conversation {output.printable(view.summary.id)}, began {output.minute(view.summary.created_at)}"
    ]
    for m in view.messages:
        said = "(text erased)" if m.erased_at else output.printable(m.content)
        lines.append(f"{output.minute(m.at)}  {m.role}: {said}")
        turn = closing.get(m.id or "")
        if turn is not None:
            taught = [
                f"{kind} {fid} {output.printable(texts.get(fid, ''))}".rstrip()
                for kind, ids in turn.facts.items()
                for fid in ids
            ]
            lines += [f"    → {output.turn_state(turn)}", *(f"      {t}" for t in taught)]
    if view.memories:
        lines.append("memories learnt from it or touched by its turns:")
        lines += [f"  {f.id}  {f.status}  {output.printable(f.text) or '(erased)'}" for f in view.memories]
    output.stdout().print("\n".join(lines), highlight=False, soft_wrap=True, markup=False)


@conversations.command()
def remember(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(metavar="ID", help="The conversation's id.")],
    switch: Annotated[OnOff, typer.Argument(help="off: its later turns are neither stored nor learnt from.")],
    json: Json = False,
) -> None:
    """Your switch for one conversation: off, its later turns are answered (with recall) but
    neither stored nor learnt from; on again, they are. Works before its first turn too."""

    async def work(s: Session) -> ConversationSummary:
        return await s.memory.remember_conversation(s.scope, conversation, switch is OnOff.ON)

    done = run(ctx, work, creates=True)
    if json:
        output.emit_json(ConversationSummaryPublic.of(done).model_dump(mode="json"))
    elif done.remember:
        output.say(
            f"Conversation {output.printable(done.id)} is remembered: its turns are stored and learnt from."
        )
    else:
        output.say(
            f"Conversation {output.printable(done.id)} is not remembered: its turns are answered, not stored."
        )
