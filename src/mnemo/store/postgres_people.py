"""Users, agents, API keys, settings and conversations in the PostgreSQL store.

Everything but the server-wide settings is read and written under the user's
row-level security; a user is found by name, and an API key by id, through
the narrow functions of migrations/postgres_security.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import psycopg

from ..domain import (
    Agent,
    ApiKey,
    Conflict,
    InvalidInput,
    Message,
    NameTaken,
    NotFound,
    ReviewPolicy,
    Scope,
    User,
    new_id,
)
from .base import UNSET
from .postgres_rows import AGENT_COLUMNS, KEY_COLUMNS, USER_COLUMNS, agent_from, key_from, user_from


class PeopleMixin:
    """Part of PostgresStore (it supplies `_tx`, `_as_user` and `_clock`)."""

    async def ensure_user(self, name: str) -> User:
        async with self._tx() as cur:
            user_id = await self._user_named(cur, name)
            if user_id is None:
                user_id = new_id()
                await self._as_user(cur, user_id)
                await cur.execute(
                    "INSERT INTO users (id, name, created_at) VALUES (%s, %s, %s)"
                    " ON CONFLICT (name) DO NOTHING RETURNING id",
                    (user_id, name, self._clock()),
                )
                if await cur.fetchone() is None:  # created meanwhile by another process
                    user_id = await self._user_named(cur, name)
            return await self._user_row(cur, user_id)

    async def _user_named(self, cur: psycopg.AsyncCursor, name: str) -> str | None:
        await cur.execute("SELECT mnemo_user_named(%s)", (name,))
        return (await cur.fetchone())[0]

    async def _user_row(self, cur: psycopg.AsyncCursor, user_id: str) -> User | None:
        await self._as_user(cur, user_id)
        await cur.execute(f"SELECT {USER_COLUMNS} FROM users WHERE id = %s", (user_id,))
        row = await cur.fetchone()
        return user_from(row) if row else None

    async def find_user(self, name: str) -> User | None:
        async with self._tx() as cur:
            user_id = await self._user_named(cur, name)
            return None if user_id is None else await self._user_row(cur, user_id)

    async def get_user(self, user_id: str) -> User | None:
        async with self._tx() as cur:
            return await self._user_row(cur, user_id)

    async def update_user(
        self,
        user_id: str,
        *,
        memory_enabled: bool | object | None = UNSET,
        review_policy: ReviewPolicy | object = UNSET,
    ) -> User:
        async with self._tx(user_id) as cur:
            if memory_enabled is not UNSET:
                await cur.execute(
                    "UPDATE users SET memory_enabled = %s WHERE id = %s",
                    (None if memory_enabled is None else bool(memory_enabled), user_id),
                )
            if review_policy is not UNSET:
                await cur.execute(
                    "UPDATE users SET review_policy = %s WHERE id = %s",
                    (str(ReviewPolicy(review_policy)), user_id),
                )
            user = await self._user_row(cur, user_id)
        if user is None:
            raise NotFound(f"no user {user_id}")
        return user

    async def any_user(self) -> bool:
        async with self._tx() as cur:
            await cur.execute("SELECT mnemo_any_user()")
            return (await cur.fetchone())[0]

    # -- agents -------------------------------------------------------------------

    async def create_agent(
        self,
        user_id: str,
        name: str,
        *,
        private: bool = False,
        reads_default: bool = False,
        persona: str | None = None,
        upstream_model: str | None = None,
    ) -> Agent:
        agent = Agent(new_id(), user_id, name, private, reads_default, persona, upstream_model)
        async with self._tx(user_id) as cur:
            await self._unique_agent_name(cur, user_id, name, None)
            await cur.execute(
                "INSERT INTO agents (id, user_id, name, private, reads_default, created_at, persona,"
                " upstream_model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (agent.id, user_id, name, private, reads_default, self._clock(), persona, upstream_model),
            )
        return agent

    async def _unique_agent_name(
        self, cur: psycopg.AsyncCursor, user_id: str, name: str, agent_id: str | None
    ) -> None:
        await cur.execute(
            "SELECT id FROM agents WHERE user_id = %s AND name = %s AND deleted_at IS NULL", (user_id, name)
        )
        clash = await cur.fetchone()
        if clash and clash[0] != agent_id:
            raise NameTaken(f"an agent named {name!r} already exists")

    async def update_agent(self, user_id: str, agent_id: str, **fields: object) -> Agent:
        """Change an agent's name, persona, upstream_model, private or reads_default."""
        allowed = {"name", "persona", "upstream_model", "private", "reads_default"}
        unknown = set(fields) - allowed
        if unknown:
            raise InvalidInput(f"cannot change {', '.join(sorted(unknown))} of an agent")
        async with self._tx(user_id) as cur:
            await self._agent_row(cur, user_id, agent_id)
            if "name" in fields:
                await self._unique_agent_name(cur, user_id, str(fields["name"]), agent_id)
            for column, value in fields.items():  # column: one of `allowed`
                if column in ("private", "reads_default"):
                    value = bool(value)
                await cur.execute(
                    f"UPDATE agents SET {column} = %s WHERE id = %s AND user_id = %s",
                    (value, agent_id, user_id),
                )
            return await self._agent_row(cur, user_id, agent_id)

    async def get_agent(self, user_id: str, agent_id: str) -> Agent:
        async with self._tx(user_id) as cur:
            return await self._agent_row(cur, user_id, agent_id)

    async def _agent_row(self, cur: psycopg.AsyncCursor, user_id: str, agent_id: str) -> Agent:
        await cur.execute(
            f"SELECT {AGENT_COLUMNS} FROM agents WHERE id = %s AND user_id = %s AND deleted_at IS NULL",
            (agent_id, user_id),
        )
        row = await cur.fetchone()
        if row is None:
            raise NotFound(f"no agent {agent_id}")
        return agent_from(row)

    async def list_agents(self, user_id: str) -> list[Agent]:
        async with self._tx(user_id) as cur:
            await cur.execute(
                f"SELECT {AGENT_COLUMNS} FROM agents"
                " WHERE user_id = %s AND deleted_at IS NULL ORDER BY created_at, id",
                (user_id,),
            )
            return [agent_from(r) for r in await cur.fetchall()]

    # -- settings -------------------------------------------------------------------

    async def get_setting(self, key: str) -> str | None:
        async with self._tx() as cur:
            await cur.execute("SELECT value FROM settings WHERE key = %s", (key,))
            row = await cur.fetchone()
        return row[0] if row else None

    async def set_setting(self, key: str, value: str | None) -> None:
        async with self._tx() as cur:
            if value is None:
                await cur.execute("DELETE FROM settings WHERE key = %s", (key,))
            else:
                await cur.execute(
                    "INSERT INTO settings VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    # -- conversations ----------------------------------------------------------------

    async def save_messages(
        self, scope: Scope, conversation_id: str, messages: Sequence[Message], at: datetime
    ) -> list[Message]:
        async with self._tx(scope.user_id) as cur:
            return await self._save_messages(cur, scope, conversation_id, messages, at)

    async def _save_messages(
        self,
        cur: psycopg.AsyncCursor,
        scope: Scope,
        conversation_id: str,
        messages: Sequence[Message],
        at: datetime,
    ) -> list[Message]:
        await self._add_conversation(cur, scope.user_id, conversation_id, scope.agent_id, at)
        saved = []
        for m in messages:
            m = Message(m.role, m.content, m.id or new_id())
            await self._add_message(cur, scope.user_id, conversation_id, m, at)
            saved.append(m)
        return saved

    # ids are each user's own (keys are (user_id, id)): another user's are never in the way

    @staticmethod
    async def _add_conversation(
        cur: psycopg.AsyncCursor, user_id: str, conversation_id: str, agent_id: str | None, at: datetime
    ) -> None:
        await cur.execute(
            "INSERT INTO conversations VALUES (%s, %s, %s, %s) ON CONFLICT (user_id, id) DO NOTHING",
            (conversation_id, user_id, agent_id, at),
        )

    @staticmethod
    async def _add_message(
        cur: psycopg.AsyncCursor, user_id: str, conversation_id: str, m: Message, at: datetime
    ) -> bool:
        """Whether the message is new; one the user has already must be this conversation's."""
        await cur.execute(
            "INSERT INTO messages VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (user_id, id) DO NOTHING",
            (m.id, conversation_id, user_id, m.role, m.content, at),
        )
        if cur.rowcount == 1:
            return True
        await cur.execute(
            "SELECT 1 FROM messages WHERE user_id = %s AND id = %s AND conversation_id = %s",
            (user_id, m.id, conversation_id),
        )
        if await cur.fetchone() is None:
            raise Conflict(f"message id {m.id} belongs to another of your conversations")
        return False

    async def conversation_messages(self, user_id: str, conversation_id: str) -> list[Message]:
        async with self._tx(user_id) as cur:
            await cur.execute(
                "SELECT id, role, content FROM messages WHERE user_id = %s AND conversation_id = %s"
                " ORDER BY created_at, id",
                (user_id, conversation_id),
            )
            return [Message(r[1], r[2], r[0]) for r in await cur.fetchall()]

    # -- API keys -----------------------------------------------------------------------

    async def add_api_key(self, key: ApiKey) -> ApiKey:
        async with self._tx(key.user_id) as cur:
            await cur.execute("SELECT 1 FROM users WHERE id = %s", (key.user_id,))
            if await cur.fetchone() is None:
                raise NotFound(f"no user {key.user_id}")
            await cur.execute(
                "INSERT INTO api_keys (id, user_id, name, secret_hash, created_at)"
                " VALUES (%s, %s, %s, %s, %s)",
                (key.id, key.user_id, key.name, key.secret_hash, key.created_at),
            )
        return key

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        async with self._tx() as cur:
            await cur.execute("SELECT mnemo_key_owner(%s)", (key_id,))
            (owner,) = await cur.fetchone()
            if owner is None:
                return None
            await self._as_user(cur, owner)
            await cur.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE user_id = %s AND id = %s", (owner, key_id)
            )
            row = await cur.fetchone()
        return key_from(row) if row else None

    async def list_api_keys(self, user_id: str) -> list[ApiKey]:
        async with self._tx(user_id) as cur:
            await cur.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE user_id = %s ORDER BY created_at, id", (user_id,)
            )
            return [key_from(r) for r in await cur.fetchall()]

    async def revoke_api_key(self, user_id: str, key_id: str) -> ApiKey:
        async with self._tx(user_id) as cur:
            await cur.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, %s) WHERE id = %s AND user_id = %s"
                f" RETURNING {KEY_COLUMNS}",
                (self._clock(), key_id, user_id),
            )
            row = await cur.fetchone()
        if row is None:
            raise NotFound(f"no API key {key_id}")
        return key_from(row)
