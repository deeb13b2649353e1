"""Users, agents, API keys, settings and conversations in the SQLite store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

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
from .sqlite_rows import AGENT_COLUMNS, KEY_COLUMNS, agent_from, key_from, ts, user_from


class PeopleMixin:
    """Part of SQLiteStore (it supplies `_run`, `_tx`, `_conn` and `_clock`)."""

    async def ensure_user(self, name: str) -> User:
        return await self._run(self._tx, self._ensure_user, name)

    def _ensure_user(self, cur, name: str) -> User:
        row = cur.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            cur.execute(
                "INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)",
                (new_id(), name, ts(self._clock())),
            )
            row = cur.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        return user_from(row)

    async def find_user(self, name: str) -> User | None:
        def get():
            row = self._conn.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
            return user_from(row) if row else None

        return await self._run(get)

    async def get_user(self, user_id: str) -> User | None:
        def get():
            row = self._conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
            return user_from(row) if row else None

        return await self._run(get)

    async def update_user(
        self,
        user_id: str,
        *,
        memory_enabled: bool | object | None = UNSET,
        review_policy: ReviewPolicy | object = UNSET,
    ) -> User:
        def update(cur):
            if memory_enabled is not UNSET:
                cur.execute(
                    "UPDATE users SET memory_enabled = ? WHERE id = ?",
                    (None if memory_enabled is None else int(bool(memory_enabled)), user_id),
                )
            if review_policy is not UNSET:
                cur.execute(
                    "UPDATE users SET review_policy = ? WHERE id = ?",
                    (str(ReviewPolicy(review_policy)), user_id),
                )
            row = cur.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
            if row is None:
                raise NotFound(f"no user {user_id}")
            return user_from(row)

        return await self._run(self._tx, update)

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

        def insert(cur):
            self._unique_agent_name(cur, user_id, name, None)
            cur.execute(
                "INSERT INTO agents (id, user_id, name, private, reads_default, created_at, persona,"
                " upstream_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    agent.id,
                    user_id,
                    name,
                    int(private),
                    int(reads_default),
                    ts(self._clock()),
                    persona,
                    upstream_model,
                ),
            )
            return agent

        return await self._run(self._tx, insert)

    def _unique_agent_name(self, cur, user_id: str, name: str, agent_id: str | None) -> None:
        clash = cur.execute(
            "SELECT id FROM agents WHERE user_id = ? AND name = ? AND deleted_at IS NULL",
            (user_id, name),
        ).fetchone()
        if clash and clash[0] != agent_id:
            raise NameTaken(f"an agent named {name!r} already exists")

    async def update_agent(self, user_id: str, agent_id: str, **fields: object) -> Agent:
        """Change an agent's name, persona, upstream_model, private or reads_default."""
        allowed = {"name", "persona", "upstream_model", "private", "reads_default"}
        unknown = set(fields) - allowed
        if unknown:
            raise InvalidInput(f"cannot change {', '.join(sorted(unknown))} of an agent")

        def update(cur):
            self._agent_row(cur, user_id, agent_id)
            if "name" in fields:
                self._unique_agent_name(cur, user_id, str(fields["name"]), agent_id)
            for column, value in fields.items():
                if column in ("private", "reads_default"):
                    value = int(bool(value))
                cur.execute(f"UPDATE agents SET {column} = ? WHERE id = ?", (value, agent_id))
            return self._agent_row(cur, user_id, agent_id)

        return await self._run(self._tx, update)

    async def get_agent(self, user_id: str, agent_id: str) -> Agent:
        return await self._run(lambda: self._agent_row(self._conn, user_id, agent_id))

    def _agent_row(self, cur, user_id: str, agent_id: str) -> Agent:
        row = cur.execute(
            f"SELECT {AGENT_COLUMNS} FROM agents WHERE id = ? AND user_id = ? AND deleted_at IS NULL",
            (agent_id, user_id),
        ).fetchone()
        if row is None:
            raise NotFound(f"no agent {agent_id}")
        return agent_from(row)

    async def list_agents(self, user_id: str) -> list[Agent]:
        def select():
            rows = self._conn.execute(
                f"SELECT {AGENT_COLUMNS} FROM agents"
                " WHERE user_id = ? AND deleted_at IS NULL ORDER BY created_at",
                (user_id,),
            )
            return [agent_from(r) for r in rows]

        return await self._run(select)

    async def get_setting(self, key: str) -> str | None:
        def get():
            row = self._conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
            return row[0] if row else None

        return await self._run(get)

    async def set_setting(self, key: str, value: str | None) -> None:
        def put(cur):
            if value is None:
                cur.execute("DELETE FROM settings WHERE key = ?", (key,))
            else:
                cur.execute(
                    "INSERT INTO settings VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

        await self._run(self._tx, put)

    async def save_messages(
        self, scope: Scope, conversation_id: str, messages: Sequence[Message], at: datetime
    ) -> list[Message]:
        return await self._run(self._tx, self._save_messages, scope, conversation_id, messages, at)

    def _save_messages(
        self, cur, scope: Scope, conversation_id: str, messages: Sequence[Message], at: datetime
    ) -> list[Message]:
        self._add_conversation(cur, scope.user_id, conversation_id, scope.agent_id, at)
        saved = []
        for m in messages:
            m = Message(m.role, m.content, m.id or new_id())
            self._add_message(cur, scope.user_id, conversation_id, m, at)
            saved.append(m)
        return saved

    # ids are each user's own (keys are (user_id, id)): another user's are never in the way

    @staticmethod
    def _add_conversation(
        cur, user_id: str, conversation_id: str, agent_id: str | None, at: datetime
    ) -> None:
        cur.execute(
            "INSERT INTO conversations VALUES (?, ?, ?, ?) ON CONFLICT (user_id, id) DO NOTHING",
            (conversation_id, user_id, agent_id, ts(at)),
        )

    @staticmethod
    def _add_message(cur, user_id: str, conversation_id: str, m: Message, at: datetime) -> bool:
        """Whether the message is new; one the user has already must be this conversation's."""
        cur.execute(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, id) DO NOTHING",
            (m.id, conversation_id, user_id, m.role, m.content, ts(at)),
        )
        if cur.rowcount == 1:
            return True
        found = cur.execute(
            "SELECT 1 FROM messages WHERE user_id = ? AND id = ? AND conversation_id = ?",
            (user_id, m.id, conversation_id),
        ).fetchone()
        if found is None:
            raise Conflict(f"message id {m.id} belongs to another of your conversations")
        return False

    async def conversation_messages(self, user_id: str, conversation_id: str) -> list[Message]:
        def select():
            rows = self._conn.execute(
                "SELECT id, role, content FROM messages WHERE user_id = ? AND conversation_id = ?"
                " ORDER BY created_at, id",
                (user_id, conversation_id),
            )
            return [Message(r[1], r[2], r[0]) for r in rows]

        return await self._run(select)

    async def any_user(self) -> bool:
        return await self._run(
            lambda: self._conn.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None
        )

    async def add_api_key(self, key: ApiKey) -> ApiKey:
        def insert(cur):
            if cur.execute("SELECT 1 FROM users WHERE id = ?", (key.user_id,)).fetchone() is None:
                raise NotFound(f"no user {key.user_id}")
            cur.execute(
                "INSERT INTO api_keys (id, user_id, name, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                (key.id, key.user_id, key.name, key.secret_hash, ts(key.created_at)),
            )
            return key

        return await self._run(self._tx, insert)

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        def get():
            row = self._conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)).fetchone()
            return key_from(row) if row else None

        return await self._run(get)

    async def list_api_keys(self, user_id: str) -> list[ApiKey]:
        def select():
            rows = self._conn.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_at", (user_id,)
            )
            return [key_from(r) for r in rows]

        return await self._run(select)

    async def revoke_api_key(self, user_id: str, key_id: str) -> ApiKey:
        def revoke(cur):
            cur.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND user_id = ?",
                (ts(self._clock()), key_id, user_id),
            )
            if cur.rowcount != 1:
                raise NotFound(f"no API key {key_id}")
            return key_from(
                cur.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)).fetchone()
            )

        return await self._run(self._tx, revoke)
