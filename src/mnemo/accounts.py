"""Accounts: the people mnemo keeps memories for, their agents and API keys, and the switches.

Account administration, beside a person's facts (memory.py): the API's /v1/me,
/v1/agents and /v1/admin routes, the web page's settings, `mnemo users`,
`mnemo agents` and `mnemo settings` act through it, and so does the check of
who is calling (auth.py). Deleting an agent is a change to its facts, so it is
Memory's (`Memory.delete_agent`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from . import keys
from .domain import (
    Agent,
    ApiKey,
    Conflict,
    GatePolicy,
    InvalidInput,
    MemoryMode,
    NotFound,
    ReviewPolicy,
    User,
    utcnow,
)
from .gate import memory_enabled
from .settings import Settings
from .store.base import Store

SERVER_MODE_KEY = "memory_mode"


@dataclass(frozen=True)
class Member:
    """A user as the server's administrator sees them: never a key's secret, nor any fact."""

    user: User
    live_keys: int  # keys not revoked
    memory_on: bool  # the server's mode, then the person's switch


class Accounts:
    """Built over the same store as the Memory that consults it; `mnemo.build` wires both."""

    def __init__(
        self, store: Store, settings: Settings | None = None, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._store = store
        self.settings = settings or Settings()
        self.clock = clock

    # -- people -------------------------------------------------------------------

    async def user(self, name: str) -> User:
        """The user of that name, created on first use."""
        return await self._store.ensure_user(name)

    async def find_user(self, name: str) -> User | None:
        """The user of that name, if there is one (creates nothing)."""
        return await self._store.find_user(name)

    async def any_user(self) -> bool:
        """Whether the store has any user yet."""
        return await self._store.any_user()

    async def existing_user(self, name: str) -> User:
        """The user of that name; NotFound (creating no one) if there is none."""
        user = await self._store.find_user(name)
        if user is None:
            raise NotFound(f"no user named {name!r}")
        return user

    async def existing_user_by_id(self, user_id: str) -> User:
        """The user of that id; NotFound if there is none."""
        user = await self._store.get_user(user_id)
        if user is None:
            raise NotFound(f"no user {user_id[:80]!r}")
        return user

    async def members(self) -> list[Member]:
        """Everyone, in name order, with how many live keys they have and whether memory is on."""
        mode = await self.server_mode()
        found = []
        for user in await self._store.list_users():
            live = sum(1 for k in await self._store.list_api_keys(user.id) if k.revoked_at is None)
            found.append(Member(user, live, memory_enabled(mode, user.memory_enabled)))
        return found

    async def create_user(self, name: str) -> tuple[User, ApiKey, str]:
        """A new user and its first API key (the token is shown once); Conflict if the name is taken."""
        name = name.strip()
        if not name:
            raise InvalidInput("a user needs a name")
        if await self._store.find_user(name) is not None:
            raise Conflict(f"a user named {name!r} already exists")
        user = await self._store.ensure_user(name)
        key, token = await self.create_api_key(user.id, "first key")
        return user, key, token

    # -- agents -------------------------------------------------------------------

    async def agents(self, user_id: str) -> list[Agent]:
        return await self._store.list_agents(user_id)

    async def agent(self, user_id: str, agent_id: str) -> Agent:
        """One of the user's agents; NotFound for another user's (or a deleted) agent."""
        return await self._store.get_agent(user_id, agent_id)

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
        if not name.strip():
            raise InvalidInput("an agent needs a name")
        return await self._store.create_agent(
            user_id,
            name.strip(),
            private=private,
            reads_default=reads_default,
            persona=persona,
            upstream_model=upstream_model,
        )

    async def update_agent(self, user_id: str, agent_id: str, **fields: object) -> Agent:
        return await self._store.update_agent(user_id, agent_id, **fields)

    # -- keys ---------------------------------------------------------------------

    async def create_api_key(self, user_id: str, name: str = "default") -> tuple[ApiKey, str]:
        """A new key for the user, and its token: shown to the caller once, stored hashed."""
        key, token = keys.new_key(user_id, name, self.clock())
        return await self._store.add_api_key(key), token

    async def api_keys(self, user_id: str) -> list[ApiKey]:
        """The user's keys, revoked ones included (never their secrets)."""
        return await self._store.list_api_keys(user_id)

    async def revoke_api_key(self, user_id: str, key_id: str) -> ApiKey:
        """Revoke one of the user's keys; it stops working at once. NotFound for another user's key."""
        return await self._store.revoke_api_key(user_id, key_id)

    async def authenticate(self, token: str) -> User | None:
        """The user a token belongs to, if it is well formed, known, unrevoked and matches."""
        parsed = keys.parse(token)
        if parsed is None:
            return None
        key = await self._store.get_api_key(parsed[0])
        if key is None or key.revoked_at is not None or not keys.matches(key, parsed[1]):
            return None
        return await self._store.get_user(key.user_id)

    # -- settings and switches ----------------------------------------------------

    async def secret(self, name: str) -> str:
        """A random server-side secret kept in the store (made on first use), e.g. to sign
        the web page's forms; every process sharing the store gets the same one."""
        key = f"secret:{name}"
        stored = await self._store.get_setting(key)
        if stored is None:
            await self._store.set_setting(key, secrets.token_urlsafe(32))
            stored = await self._store.get_setting(key)  # a racing process may have won: take its
        assert stored is not None
        return stored

    async def server_mode(self) -> MemoryMode | None:
        stored = await self._store.get_setting(SERVER_MODE_KEY)
        return MemoryMode(stored) if stored else self.settings.memory_mode

    async def set_server_mode(self, mode: MemoryMode | None) -> None:
        await self._store.set_setting(SERVER_MODE_KEY, str(mode) if mode else None)

    async def set_user_switch(self, user_id: str, enabled: bool | None) -> User:
        return await self._store.update_user(user_id, memory_enabled=enabled)

    async def set_record_recalls(self, user_id: str, on: bool) -> User:
        """The person's switch of the recall log; off deletes what was recorded."""
        return await self._store.update_user(user_id, record_recalls=on)

    async def set_review_policy(self, user_id: str, policy: ReviewPolicy) -> User:
        return await self._store.update_user(user_id, review_policy=policy)

    async def gate(self, user_id: str) -> GatePolicy:
        """The person's sensitive-data gate (NotFound for no such user)."""
        user = await self._store.get_user(user_id)
        if user is None:
            raise NotFound(f"no user {user_id}")
        return user.gate

    async def set_gate(self, user_id: str, changes: dict[str, str]) -> User:
        """Change the gate's action for some categories (InvalidInput, changing nothing, for an
        unknown category or action)."""
        return await self._store.update_user(user_id, gate=(await self.gate(user_id)).changed(changes))

    async def memory_enabled(self, user: str | User) -> bool:
        """Whether memory is on for the user (by id, or as read already): the server's mode,
        then the person's own switch."""
        found = await self._store.get_user(user) if isinstance(user, str) else user
        return memory_enabled(await self.server_mode(), found.memory_enabled if found else None)
