"""Import and export, verbatim (see mnemo.batch.transfer): the statements both stores share.

A lossless import writes facts and events as they were exported: the events
keep their times, digests and hashes, so the imported audit log verifies as
the original did.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ... import audit
from ...domain import Conflict, Conversation, Event, Fact, InvalidInput, Message, parse_time
from ..rows import when
from . import conversations
from .backfill import advance_mark
from .facts import head, taken_fact
from .people import add_conversation, add_message
from .tx import Tx, marks


async def list_conversations(
    tx: Tx, user_id: str, after: tuple[datetime, str] | None, limit: int
) -> list[Conversation]:
    sql = "SELECT id, agent_id, created_at, remember FROM conversations WHERE user_id = ?"
    params: list[Any] = [user_id]
    if after is not None:
        sql += " AND (created_at, id) > (?, ?)"
        params += [after[0], after[1]]
    heads = await tx.all(sql + " ORDER BY created_at, id LIMIT ?", [*params, limit])
    if not heads:
        return []
    rows = await tx.all(
        "SELECT conversation_id, id, role, content, created_at, erased_at FROM messages"
        f" WHERE user_id = ? AND conversation_id IN ({marks(len(heads))}) ORDER BY created_at, id",
        [user_id, *(h[0] for h in heads)],
    )
    messages: dict[str, list[Message]] = {}
    for conversation_id, mid, role, content, at, erased_at in rows:
        messages.setdefault(conversation_id, []).append(
            Message(role, content, mid, parse_time(at), parse_time(erased_at))
        )
    return [
        Conversation(cid, user_id, agent, when(at), tuple(messages.get(cid, ())), remember=bool(on))
        for cid, agent, at, on in heads
    ]


async def import_conversation(tx: Tx, c: Conversation) -> int:
    await add_conversation(tx, c.user_id, c.id, c.agent_id, c.created_at)
    if not c.remember:  # the person's switch comes along (one already off here stays off)
        await conversations.set_remember(tx, c.user_id, c.id, c.agent_id, False, c.created_at)
    added = 0
    for m in c.messages:
        added += await add_message(tx, c.user_id, c.id, m, m.at or c.created_at)
    for mark in c.marks:  # a mark already here is kept
        await advance_mark(tx, c.user_id, mark, mark.processed_at or mark.said_at)
    return added


async def check_import(tx: Tx, user_id: str, facts: Sequence[Fact], events: Sequence[Event]) -> None:
    """Before a lossless import of facts and events: they are the user's, continue the user's
    chain (under the user's lock), and name no fact the user has already."""
    if any(f.user_id != user_id for f in facts) or any(e.user_id != user_id for e in events):
        raise InvalidInput("an imported fact or event names another user")
    await tx.lock_user(user_id)
    if events and events[0].prev_hash != await head(tx, user_id):
        raise Conflict("the imported events do not continue this user's audit log")
    taken = await taken_fact(tx, user_id, [f.id for f in facts])
    if taken:
        raise Conflict(f"memory {taken} is already in this database")


def imported_event(e: Event) -> tuple[Any, ...]:
    """An event's row for IMPORT_EVENT, as it was."""
    return (*audit.event_row(e), e.redacted, e.redacted_for)
