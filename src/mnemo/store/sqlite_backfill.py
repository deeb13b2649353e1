"""What `mnemo backfill` reads and marks in the SQLite store (see mnemo.backfill)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..domain import BackfillMark, Conflict, ConversationRef, Message, User, parse_time
from .sqlite_rows import ts, user_from


class BackfillMixin:
    """Part of SQLiteStore (it supplies `_run` and `_conn`)."""

    async def users_with_conversations(self) -> list[User]:
        def select():
            rows = self._conn.execute(
                "SELECT * FROM users WHERE id IN (SELECT user_id FROM conversations) ORDER BY name"
            )
            return [user_from(r) for r in rows]

        return await self._run(select)

    async def conversations_since(self, user_id: str, since: datetime | None) -> list[ConversationRef]:
        def select():
            rows = self._conn.execute(
                "SELECT m.conversation_id, c.agent_id, MIN(m.created_at) AS first"
                " FROM messages m JOIN conversations c ON c.user_id = m.user_id AND c.id = m.conversation_id"
                " WHERE m.user_id = ? AND m.created_at >= ?"
                " GROUP BY m.conversation_id, c.agent_id ORDER BY first, m.conversation_id",
                (user_id, ts(since) if since else ""),
            )
            return [ConversationRef(r[0], user_id, r[1], parse_time(r[2])) for r in rows]

        return await self._run(select)

    async def timed_messages(
        self, user_id: str, conversation_ids: Sequence[str]
    ) -> dict[str, list[tuple[Message, datetime]]]:
        def select():
            out: dict[str, list[tuple[Message, datetime]]] = {}
            if not conversation_ids:
                return out
            marks = ", ".join("?" * len(conversation_ids))
            rows = self._conn.execute(
                "SELECT m.conversation_id, m.id, m.role, m.content, m.created_at FROM messages m"
                f" WHERE m.user_id = ? AND m.conversation_id IN ({marks})"
                " AND NOT EXISTS (SELECT 1 FROM jobs j, json_each(j.message_ids) e"
                " WHERE j.user_id = m.user_id AND j.conversation_id = m.conversation_id"
                " AND j.automation = 1 AND e.value = m.id)"
                " ORDER BY m.conversation_id, m.created_at, m.id",
                (user_id, *conversation_ids),
            )
            for cid, mid, role, content, at in rows:
                out.setdefault(cid, []).append((Message(role, content, mid), parse_time(at)))
            return out

        return await self._run(select)

    async def backfill_marks(self, user_id: str, conversation_ids: Sequence[str]) -> list[BackfillMark]:
        def select():
            if not conversation_ids:
                return []
            marks = ", ".join("?" * len(conversation_ids))
            rows = self._conn.execute(
                "SELECT conversation_id, turn_id, run_id, said_at, processed_at FROM backfill_progress"
                f" WHERE user_id = ? AND conversation_id IN ({marks})",
                (user_id, *conversation_ids),
            )
            return [BackfillMark(r[0], r[1], r[2], parse_time(r[3]), parse_time(r[4])) for r in rows]

        return await self._run(select)

    def _advance_mark(self, cur, user_id: str, mark: BackfillMark, now: datetime) -> None:
        """Inside the transaction that applies the turn's facts."""
        values = (mark.run_id, ts(mark.said_at), ts(now), user_id, mark.conversation_id, mark.turn_id)
        if mark.replaces is None:
            cur.execute(
                "INSERT INTO backfill_progress (run_id, said_at, processed_at, user_id, conversation_id,"
                " turn_id) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                values,
            )
        else:
            cur.execute(
                "UPDATE backfill_progress SET run_id = ?, said_at = ?, processed_at = ?"
                " WHERE user_id = ? AND conversation_id = ? AND turn_id = ? AND run_id = ?",
                (*values, mark.replaces),
            )
        if cur.rowcount != 1:
            raise Conflict(f"turn {mark.turn_id} was learnt from meanwhile")
