"""What `mnemo backfill` reads and marks (see mnemo.batch.backfill): the statements both stores share."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ...domain import EARLIEST, BackfillMark, Conflict, ConversationRef, Message, parse_time
from ..rows import when
from .tx import Tx, marks


async def conversations_since(tx: Tx, user_id: str, since: datetime | None) -> list[ConversationRef]:
    rows = await tx.all(
        "SELECT m.conversation_id, c.agent_id, MIN(m.created_at) AS first"
        " FROM messages m JOIN conversations c ON c.user_id = m.user_id AND c.id = m.conversation_id"
        f" WHERE m.user_id = ? AND m.created_at >= ? AND c.remember = {tx.true}"
        " GROUP BY m.conversation_id, c.agent_id ORDER BY first, m.conversation_id",
        (user_id, since or EARLIEST),
    )
    return [ConversationRef(r[0], user_id, r[1], when(r[2])) for r in rows]


async def timed_messages(
    tx: Tx, user_id: str, conversation_ids: Sequence[str]
) -> dict[str, list[tuple[Message, datetime]]]:
    out: dict[str, list[tuple[Message, datetime]]] = {}
    if not conversation_ids:
        return out
    rows = await tx.all(
        "SELECT m.conversation_id, m.id, m.role, m.content, m.created_at FROM messages m"
        f" WHERE m.user_id = ? AND m.conversation_id IN ({marks(len(conversation_ids))}) AND {_learnable(tx)}"
        " ORDER BY m.conversation_id, m.created_at, m.id",
        (user_id, *conversation_ids),
    )
    for cid, mid, role, content, at in rows:
        out.setdefault(cid, []).append((Message(role, content, mid), when(at)))
    return out


def _learnable(tx: Tx) -> str:
    """A message `m` backfill may learn from: not erased, not of an automation turn."""
    return (
        "m.erased_at IS NULL AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.user_id = m.user_id"
        f" AND j.conversation_id = m.conversation_id AND j.automation = {tx.true}"  # jobs_automation
        f" AND {tx.json_has('j.message_ids', 'm.id')})"
    )


async def unlearnt_before(tx: Tx, user_id: str, since: datetime) -> tuple[int, int, datetime | None]:
    """The user messages said before `since` that no backfill learnt from (each opens a turn):
    how many conversations hold them, how many there are, and when the oldest was said."""
    row = await tx.one(
        "SELECT COUNT(DISTINCT m.conversation_id), COUNT(*), MIN(m.created_at) FROM messages m"
        f" WHERE m.user_id = ? AND m.created_at < ? AND m.role = 'user' AND {_learnable(tx)}"
        " AND NOT EXISTS (SELECT 1 FROM backfill_progress b WHERE b.user_id = m.user_id"
        " AND b.conversation_id = m.conversation_id AND b.turn_id = m.id)",
        (user_id, since),
    )
    assert row is not None, "an aggregate has a row"
    return int(row[0]), int(row[1]), when(row[2]) if row[2] is not None else None


async def backfill_marks(tx: Tx, user_id: str, conversation_ids: Sequence[str]) -> list[BackfillMark]:
    if not conversation_ids:
        return []
    rows = await tx.all(
        "SELECT conversation_id, turn_id, run_id, said_at, processed_at FROM backfill_progress"
        f" WHERE user_id = ? AND conversation_id IN ({marks(len(conversation_ids))})",
        (user_id, *conversation_ids),
    )
    return [BackfillMark(r[0], r[1], r[2], when(r[3]), parse_time(r[4])) for r in rows]


async def advance_mark(tx: Tx, user_id: str, mark: BackfillMark, now: datetime) -> None:
    """Inside the transaction that applies the turn's facts."""
    values = (mark.run_id, mark.said_at, now, user_id, mark.conversation_id, mark.turn_id)
    if mark.replaces is None:
        changed = await tx.execute(
            "INSERT INTO backfill_progress (run_id, said_at, processed_at, user_id, conversation_id, turn_id)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            values,
        )
    else:
        changed = await tx.execute(
            "UPDATE backfill_progress SET run_id = ?, said_at = ?, processed_at = ?"
            " WHERE user_id = ? AND conversation_id = ? AND turn_id = ? AND run_id = ?",
            (*values, mark.replaces),
        )
    if changed != 1:
        raise Conflict(f"turn {mark.turn_id} was learnt from meanwhile")
