"""Import and export in the SQLite store: conversations, users, agents, facts and events verbatim.

A lossless import writes facts and events as they were exported: the events
keep their times, digests and hashes, so the imported audit log verifies as
the original did (see mnemo.transfer).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from .. import audit
from ..domain import (
    Action,
    Agent,
    Change,
    Conflict,
    Conversation,
    Event,
    Fact,
    InvalidInput,
    Message,
    User,
    parse_time,
)
from .sqlite_rows import AGENT_COLUMNS, ts, user_from


class TransferMixin:
    """Part of SQLiteStore (it supplies `_run`, `_tx`, `_conn`, `_clock`, `_write_fact`, `_index`,
    `_add_conversation` and `_add_message`)."""

    async def list_conversations(
        self, user_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> list[Conversation]:
        def select() -> list[Conversation]:
            sql = "SELECT id, agent_id, created_at FROM conversations WHERE user_id = ?"
            params: list[Any] = [user_id]
            if after is not None:
                sql += " AND (created_at, id) > (?, ?)"
                params += [ts(after[0]), after[1]]
            heads = self._conn.execute(sql + " ORDER BY created_at, id LIMIT ?", [*params, limit]).fetchall()
            if not heads:
                return []
            marks = ", ".join("?" * len(heads))
            rows = self._conn.execute(
                "SELECT conversation_id, id, role, content, created_at FROM messages"
                f" WHERE user_id = ? AND conversation_id IN ({marks}) ORDER BY created_at, id",
                [user_id, *(h[0] for h in heads)],
            )
            messages: dict[str, list[Message]] = {}
            for conversation_id, *m in rows:
                messages.setdefault(conversation_id, []).append(Message(m[1], m[2], m[0], parse_time(m[3])))
            return [
                Conversation(cid, user_id, agent, parse_time(at), tuple(messages.get(cid, ())))
                for cid, agent, at in heads
            ]

        return await self._run(select)

    async def import_conversation(self, conversation: Conversation) -> int:
        return await self._run(self._tx, self._import_conversation, conversation)

    def _import_conversation(self, cur, c: Conversation) -> int:
        self._add_conversation(cur, c.user_id, c.id, c.agent_id, c.created_at)
        added = 0
        for m in c.messages:
            added += self._add_message(cur, c.user_id, c.id, m, m.at or c.created_at)
        for mark in c.marks:  # a mark already here is kept
            self._advance_mark(cur, c.user_id, mark, mark.processed_at or mark.said_at)
        return added

    async def import_user(self, user: User) -> User:
        def insert(cur) -> User:
            cur.execute(
                "INSERT INTO users (id, name, created_at, memory_enabled, review_policy)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    user.id,
                    user.name,
                    ts(self._clock()),
                    None if user.memory_enabled is None else int(user.memory_enabled),
                    str(user.review_policy),
                ),
            )
            if cur.rowcount != 1:
                raise Conflict(f"a user with the id {user.id} or the name {user.name!r} already exists")
            return user_from(cur.execute("SELECT * FROM users WHERE id = ?", (user.id,)).fetchone())

        return await self._run(self._tx, insert)

    async def import_agent(self, agent: Agent) -> bool:
        def insert(cur) -> bool:
            cur.execute(
                "INSERT INTO agents (id, user_id, name, private, reads_default, persona, upstream_model,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    agent.id,
                    agent.user_id,
                    agent.name,
                    int(agent.private),
                    int(agent.reads_default),
                    agent.persona,
                    agent.upstream_model,
                    ts(self._clock()),
                ),
            )
            if cur.rowcount == 1:
                return True
            row = cur.execute(
                f"SELECT {AGENT_COLUMNS} FROM agents WHERE user_id = ? AND id = ?", (agent.user_id, agent.id)
            ).fetchone()
            if row is None:
                raise Conflict(f"the agent {agent.name!r} ({agent.id}) clashes with an agent already here")
            return False

        return await self._run(self._tx, insert)

    async def chain_head(self, user_id: str) -> str:
        def select() -> str:
            row = self._conn.execute(
                "SELECT hash FROM fact_events WHERE user_id = ? ORDER BY seq DESC LIMIT 1", (user_id,)
            ).fetchone()
            return row[0] if row else audit.GENESIS

        return await self._run(select)

    async def import_facts(
        self, user_id: str, facts: Sequence[tuple[Fact, np.ndarray | None]], events: Sequence[Event]
    ) -> None:
        await self._run(self._tx, self._import_facts, user_id, list(facts), list(events))

    def _import_facts(
        self, cur, user_id: str, facts: list[tuple[Fact, np.ndarray | None]], events: list[Event]
    ) -> None:
        if any(f.user_id != user_id for f, _ in facts) or any(e.user_id != user_id for e in events):
            raise InvalidInput("an imported fact or event names another user")
        row = cur.execute(
            "SELECT hash FROM fact_events WHERE user_id = ? ORDER BY seq DESC LIMIT 1", (user_id,)
        ).fetchone()
        head = row[0] if row else audit.GENESIS
        if events and events[0].prev_hash != head:
            raise Conflict("the imported events do not continue this user's audit log")
        ids = [f.id for f, _ in facts]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            taken = cur.execute(
                f"SELECT id FROM facts WHERE id IN ({', '.join('?' * len(chunk))}) LIMIT 1", chunk
            ).fetchone()
            if taken:
                raise Conflict(f"memory {taken[0]} is already in this database")
        vectors = False
        for fact, vector in facts:
            change = Change(fact, Action.CREATE, "import", vector=vector)
            rowid = self._write_fact(cur, change)
            vectors = self._index(cur, rowid, change) is not None or vectors
        for e in events:
            cur.execute(
                "INSERT INTO fact_events (at, user_id, fact_id, action, actor, reason, before, after,"
                " digest, prev_hash, hash, salt, redacted, redacted_for)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*audit.event_row(e), int(e.redacted), e.redacted_for),
            )
        if vectors:
            # other caches (this process's too) reload this user's vectors on their next search
            cur.execute(
                "INSERT INTO vector_generations VALUES (?, 1)"
                " ON CONFLICT (user_id) DO UPDATE SET generation = generation + 1",
                (user_id,),
            )
