"""What `mnemo backfill` reads and marks in the PostgreSQL store (see mnemo.backfill).

Every statement names its user; who has conversations at all is the one
question across users, answered (ids only) by mnemo_users_with_conversations.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import psycopg

from ..domain import BackfillMark, Conflict, ConversationRef, Message, User

_EVER = datetime(1, 1, 1, tzinfo=UTC)


class BackfillMixin:
    """Part of PostgresStore (it supplies `_tx` and `_user_row`)."""

    async def users_with_conversations(self) -> list[User]:
        async with self._tx() as cur:
            await cur.execute("SELECT * FROM mnemo_users_with_conversations()")
            ids = [r[0] for r in await cur.fetchall()]
            found = [await self._user_row(cur, user_id) for user_id in ids]
        return [u for u in found if u is not None]

    async def conversations_since(self, user_id: str, since: datetime | None) -> list[ConversationRef]:
        async with self._tx(user_id) as cur:
            await cur.execute(
                "SELECT m.conversation_id, c.agent_id, min(m.created_at) AS first"
                " FROM messages m JOIN conversations c ON c.user_id = m.user_id AND c.id = m.conversation_id"
                " WHERE m.user_id = %(user)s AND m.created_at >= %(since)s"
                " GROUP BY m.conversation_id, c.agent_id ORDER BY first, m.conversation_id",
                {"user": user_id, "since": since or _EVER},
            )
            return [ConversationRef(r[0], user_id, r[1], r[2]) for r in await cur.fetchall()]

    async def timed_messages(
        self, user_id: str, conversation_ids: Sequence[str]
    ) -> dict[str, list[tuple[Message, datetime]]]:
        out: dict[str, list[tuple[Message, datetime]]] = {}
        if not conversation_ids:
            return out
        async with self._tx(user_id) as cur:
            await cur.execute(
                "SELECT m.conversation_id, m.id, m.role, m.content, m.created_at FROM messages m"
                " WHERE m.user_id = %(user)s AND m.conversation_id = ANY (%(ids)s)"
                " AND NOT EXISTS (SELECT FROM jobs j WHERE j.user_id = m.user_id"
                " AND j.conversation_id = m.conversation_id AND j.automation AND j.message_ids ? m.id)"
                " ORDER BY m.conversation_id, m.created_at, m.id",
                {"user": user_id, "ids": list(conversation_ids)},
            )
            for cid, mid, role, content, at in await cur.fetchall():
                out.setdefault(cid, []).append((Message(role, content, mid), at))
        return out

    async def backfill_marks(self, user_id: str, conversation_ids: Sequence[str]) -> list[BackfillMark]:
        if not conversation_ids:
            return []
        async with self._tx(user_id) as cur:
            await cur.execute(
                "SELECT conversation_id, turn_id, run_id, said_at, processed_at FROM backfill_progress"
                " WHERE user_id = %(user)s AND conversation_id = ANY (%(ids)s)",
                {"user": user_id, "ids": list(conversation_ids)},
            )
            return [BackfillMark(*r) for r in await cur.fetchall()]

    async def _advance_mark(
        self, cur: psycopg.AsyncCursor, user_id: str, mark: BackfillMark, now: datetime
    ) -> None:
        """Inside the transaction that applies the turn's facts."""
        values = (mark.run_id, mark.said_at, now, user_id, mark.conversation_id, mark.turn_id)
        if mark.replaces is None:
            await cur.execute(
                "INSERT INTO backfill_progress (run_id, said_at, processed_at, user_id, conversation_id,"
                " turn_id) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                values,
            )
        else:
            await cur.execute(
                "UPDATE backfill_progress SET run_id = %s, said_at = %s, processed_at = %s"
                " WHERE user_id = %s AND conversation_id = %s AND turn_id = %s AND run_id = %s",
                (*values, mark.replaces),
            )
        if cur.rowcount != 1:
            raise Conflict(f"turn {mark.turn_id} was learnt from meanwhile")
