"""Import and export in the PostgreSQL store: conversations, users, agents, facts and events verbatim.

As in SQLite (see sqlite_transfer.py). Every statement runs under the user's
row-level security and names its user; a lossless import of facts takes the
same per-user lock as a commit, so that the chain it continues cannot move
under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from .. import audit
from ..domain import Action, Agent, Change, Conflict, Conversation, Event, Fact, InvalidInput, Message, User
from .migrations.postgres import LOCK_NAMESPACE
from .postgres_commit import _INSERT, _values
from .postgres_rows import AGENT_COLUMNS


class TransferMixin:
    """Part of PostgresStore (it supplies `_tx`, `_clock`, `_user_row`, `_send_vector`, `_count`,
    `_add_conversation` and `_add_message`)."""

    async def list_conversations(
        self, user_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> list[Conversation]:
        sql = "SELECT id, agent_id, created_at FROM conversations WHERE user_id = %(user)s"
        params: dict[str, Any] = {"user": user_id, "limit": limit}
        if after is not None:
            sql += " AND (created_at, id) > (%(at)s, %(id)s)"
            params.update(at=after[0], id=after[1])
        async with self._tx(user_id) as cur:
            await cur.execute(sql + " ORDER BY created_at, id LIMIT %(limit)s", params)
            heads = await cur.fetchall()
            if not heads:
                return []
            await cur.execute(
                "SELECT conversation_id, id, role, content, created_at FROM messages"
                " WHERE user_id = %s AND conversation_id = ANY (%s) ORDER BY created_at, id",
                (user_id, [h[0] for h in heads]),
            )
            messages: dict[str, list[Message]] = {}
            for conversation_id, mid, role, content, at in await cur.fetchall():
                messages.setdefault(conversation_id, []).append(Message(role, content, mid, at))
        return [
            Conversation(cid, user_id, agent, at, tuple(messages.get(cid, ()))) for cid, agent, at in heads
        ]

    async def import_conversation(self, conversation: Conversation) -> int:
        c = conversation
        async with self._tx(c.user_id) as cur:
            await self._add_conversation(cur, c.user_id, c.id, c.agent_id, c.created_at)
            added = 0
            for m in c.messages:
                added += await self._add_message(cur, c.user_id, c.id, m, m.at or c.created_at)
            for mark in c.marks:  # a mark already here is kept
                await self._advance_mark(cur, c.user_id, mark, mark.processed_at or mark.said_at)
        return added

    async def import_user(self, user: User) -> User:
        async with self._tx(user.id) as cur:
            await cur.execute(
                "INSERT INTO users (id, name, created_at, memory_enabled, review_policy)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (user.id, user.name, self._clock(), user.memory_enabled, str(user.review_policy)),
            )
            if await cur.fetchone() is None:
                raise Conflict(f"a user with the id {user.id} or the name {user.name!r} already exists")
            return await self._user_row(cur, user.id)

    async def import_agent(self, agent: Agent) -> bool:
        async with self._tx(agent.user_id) as cur:
            await cur.execute(
                "INSERT INTO agents (id, user_id, name, private, reads_default, persona, upstream_model,"
                " created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (
                    agent.id,
                    agent.user_id,
                    agent.name,
                    agent.private,
                    agent.reads_default,
                    agent.persona,
                    agent.upstream_model,
                    self._clock(),
                ),
            )
            if await cur.fetchone() is not None:
                return True
            await cur.execute(
                f"SELECT {AGENT_COLUMNS} FROM agents WHERE user_id = %s AND id = %s",
                (agent.user_id, agent.id),
            )
            if await cur.fetchone() is None:
                raise Conflict(f"the agent {agent.name!r} ({agent.id}) clashes with an agent already here")
            return False

    async def chain_head(self, user_id: str) -> str:
        async with self._tx(user_id) as cur:
            return await self._head(cur, user_id)

    @staticmethod
    async def _head(cur, user_id: str) -> str:
        await cur.execute(
            "SELECT hash FROM fact_events WHERE user_id = %s ORDER BY seq DESC LIMIT 1", (user_id,)
        )
        row = await cur.fetchone()
        return row[0] if row else audit.GENESIS

    async def import_facts(
        self, user_id: str, facts: Sequence[tuple[Fact, np.ndarray | None]], events: Sequence[Event]
    ) -> None:
        if any(f.user_id != user_id for f, _ in facts) or any(e.user_id != user_id for e in events):
            raise InvalidInput("an imported fact or event names another user")
        async with self._tx(user_id) as cur:
            await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, user_id))
            if events and events[0].prev_hash != await self._head(cur, user_id):
                raise Conflict("the imported events do not continue this user's audit log")
            await cur.execute(
                "SELECT id FROM facts WHERE user_id = %s AND id = ANY (%s) LIMIT 1",
                (user_id, [f.id for f, _ in facts]),
            )
            taken = await cur.fetchone()
            if taken:
                raise Conflict(f"memory {taken[0]} is already in this database")
            changes = [Change(f, Action.CREATE, "import", vector=v) for f, v in facts]
            vectors: dict[str, int] = {}
            async with cur.connection.pipeline():
                for change in changes:
                    await cur.execute(_INSERT, _values(change.fact))
                    if change.vector is not None and change.fact.embedding_model:
                        await self._send_vector(cur.connection, change)
                        model = change.fact.embedding_model
                        vectors[model] = vectors.get(model, 0) + 1
                for e in events:
                    await cur.execute(
                        "INSERT INTO fact_events (at, user_id, fact_id, action, actor, reason, before,"
                        " after, digest, prev_hash, hash, salt, redacted, redacted_for)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (*audit.event_row(e), e.redacted, e.redacted_for),
                    )
            await self._count(cur, user_id, changes, vectors)
