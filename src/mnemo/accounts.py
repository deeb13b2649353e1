"""Accounts: the people mnemo keeps memories for, their agents and API keys, and the switches.

Account administration, beside a person's facts (memory.py): the API's /v1/me,
/v1/agents and /v1/admin routes, the web page's settings, `mnemo users`,
`mnemo agents` and `mnemo settings` act through it, and so does the check of
who is calling (auth.py). Deleting an agent is a change to its facts, so it is
Memory's (`Memory.delete_agent`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from . import keys, sensitive
from .domain import (
    MAX_TOKEN_BUDGET,
    Agent,
    ApiKey,
    DayUsage,
    GatePolicy,
    InvalidInput,
    MemoryMode,
    NotFound,
    ReviewPolicy,
    TokenUsage,
    User,
    next_utc_midnight,
    plain_name,
    tokens_left,
    utc_day,
    utcnow,
    without_controls,
)
from .gate import memory_enabled
from .settings import Settings
from .store.base import Store

SERVER_MODE_KEY = "memory_mode"
log = logging.getLogger(__name__)


class AccountDisabled(Exception):
    """A right key of an account the administrator disabled."""


@dataclass(frozen=True)
class Member:
    """A user as the server's administrator sees them: never a key's secret, nor any fact."""

    user: User
    live_keys: int  # keys not revoked
    memory_on: bool  # the server's mode, then the person's switch
    turns: dict[str, int]  # how many of their turns are in each state of the queue

    @property
    def queued(self) -> int:
        """Turns waiting to be learnt from: queued, in hand, over budget or waiting for a model."""
        return sum(self.turns.get(s, 0) for s in ("pending", "claimed", "over_budget", "waiting"))

    @property
    def failed(self) -> int:
        return self.turns.get("failed", 0)


USAGE_DAYS = 30  # how many UTC days a usage report covers, today included


@dataclass(frozen=True)
class Usage:
    """A person's tokens spent on learning: each of the last USAGE_DAYS UTC days, today first
    (zeros for a day without any), and their daily budget."""

    days: list[DayUsage]
    budget: int | None  # the one that applies (None: unlimited)
    own_budget: int | None  # set for them by the administrator (None: the server's default)

    @property
    def today(self) -> DayUsage:
        return self.days[0]

    @property
    def left(self) -> int | None:
        """What is left of today's budget (None: unlimited)."""
        return tokens_left(self.budget, self.today.usage)

    @property
    def total(self) -> TokenUsage:
        return sum((d.usage for d in self.days), TokenUsage())

    @property
    def resets_at(self) -> datetime:
        """The next UTC midnight: a new day's budget, and the turns over budget learnt."""
        return next_utc_midnight(datetime.combine(self.today.day, time(), tzinfo=UTC))


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
        """Everyone, in name order, with how many live keys they have, whether memory is on and
        their turns in the queue."""
        mode = await self.server_mode()  # read once, not once a person
        return [await self.member(user, mode) for user in await self._store.list_users()]

    async def member(self, user: User, mode: MemoryMode | None) -> Member:
        """The person as the administrator sees them, under the server's memory `mode`."""
        live = sum(1 for k in await self._store.list_api_keys(user.id) if k.revoked_at is None)
        turns = await self._store.user_job_counts(user.id)
        return Member(user, live, memory_enabled(mode, user.memory_enabled), turns)

    async def rename_user(self, user_id: str, name: str) -> User:
        """The person's new name (what `--user` and MNEMO_USER name); Conflict if someone has it."""
        return await self._store.update_user(user_id, name=plain_name("the user's name", name.strip()))

    async def set_disabled(self, user_id: str, disabled: bool) -> User:
        """Disable the account (every key of it refused, 403, until it is enabled again; what it
        has stored stays, and turns already accepted are still learnt from) or enable it."""
        user = await self.existing_user_by_id(user_id)
        if disabled == (user.disabled_at is not None):
            return user  # as it is: disabled keeps its first time
        return await self._store.update_user(user_id, disabled_at=self.clock() if disabled else None)

    async def create_user(self, name: str) -> tuple[User, ApiKey, str]:
        """A new user and its first API key (the token is shown once); Conflict if the name is taken."""
        user = await self._store.create_user(plain_name("the user's name", name.strip()))
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
        gate = await self.gate(user_id)
        return await self._store.create_agent(
            user_id,
            sensitive.check_name("the agent's name", plain_name("the agent's name", name.strip()), gate),
            private=private,
            reads_default=reads_default,
            persona=None if persona is None else sensitive.screen(without_controls(persona), gate).masked,
            upstream_model=upstream_model,
        )

    async def update_agent(self, user_id: str, agent_id: str, **fields: object) -> Agent:
        """Change an agent; its name and persona go through the person's sensitive-data gate as
        when it was made (a name holding what the gate keeps out is refused, a persona masked)."""
        gate = await self.gate(user_id)
        if isinstance(name := fields.get("name"), str):
            sensitive.check_name("the agent's name", plain_name("the agent's name", name), gate)
        if isinstance(persona := fields.get("persona"), str):
            fields["persona"] = sensitive.screen(without_controls(persona), gate).masked
        return await self._store.update_agent(user_id, agent_id, **fields)

    # -- keys ---------------------------------------------------------------------

    async def create_api_key(self, user_id: str, name: str = "default") -> tuple[ApiKey, str]:
        """A new key for the user, and its token: shown to the caller once, stored hashed. A label
        holding what the person's sensitive-data gate keeps out of names is refused."""
        sensitive.check_name("the key's name", plain_name("the key's name", name), await self.gate(user_id))
        key, token = keys.new_key(user_id, name, self.clock())
        return await self._store.add_api_key(key), token

    async def api_keys(self, user_id: str) -> list[ApiKey]:
        """The user's keys, revoked ones included (never their secrets)."""
        return await self._store.list_api_keys(user_id)

    async def revoke_api_key(self, user_id: str, key_id: str) -> ApiKey:
        """Revoke one of the user's keys; it stops working at once. NotFound for another user's key."""
        return await self._store.revoke_api_key(user_id, key_id)

    async def authenticate(self, token: str) -> User | None:
        """The user a token belongs to, if it is well formed, known, unrevoked and matches;
        AccountDisabled for a right key of a disabled account. The key's last use is noted
        to the hour (at most one write an hour per key)."""
        parsed = keys.parse(token)
        if parsed is None:
            return None
        found = await self._store.key_holder(parsed[0])
        if found is None:
            return None
        key, user = found
        if user is None or key.revoked_at is not None or not keys.matches(key, parsed[1]):
            return None
        if user.disabled_at is not None:
            raise AccountDisabled(user.id)
        hour = self.clock().replace(minute=0, second=0, microsecond=0)
        if key.last_used_at is None or key.last_used_at < hour:
            try:
                await self._store.touch_api_key(user.id, key.id, hour)
            except Exception:  # the note is for the administrator: a full disk must not refuse the call
                log.warning("could not note when API key %s was last used", key.id, exc_info=True)
        return user

    # -- settings and switches ----------------------------------------------------

    async def secret(self, name: str) -> str:
        """A random server-side secret kept in the store (made on first use), e.g. to sign
        the web page's forms; every process sharing the store gets the same one."""
        key = f"secret:{name}"
        stored = await self._store.get_setting(key)
        if stored is None:  # the first process to write one wins; every other reads it
            stored = await self._store.first_setting(key, secrets.token_urlsafe(32))
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

    async def set_review_stale(self, user_id: str, on: bool) -> User:
        """The person's switch of the "Still true?" list (Memory.stale)."""
        return await self._store.update_user(user_id, review_stale=on)

    async def set_review_policy(self, user_id: str, policy: ReviewPolicy) -> User:
        return await self._store.update_user(user_id, review_policy=policy)

    # -- tokens spent on learning, and budgets -------------------------------------

    async def token_budget(self, user_id: str) -> int | None:
        """The daily budget that applies to the user: their own, else the server's (None: none)."""
        own = await self._store.token_budget(user_id)
        return own if own is not None else self.settings.write.daily_token_budget

    async def set_token_budget(self, user_id: str, tokens: int | None) -> Usage:
        """Give the user a daily budget of their own (None: back to the server's default);
        their turns waiting over budget are looked at again at once."""
        if tokens is not None and not 0 <= tokens <= MAX_TOKEN_BUDGET:
            raise InvalidInput(f"a daily token budget is a whole number from 0 to {MAX_TOKEN_BUDGET}")
        user = await self.existing_user_by_id(user_id)
        await self._store.set_token_budget(user.id, tokens)
        return await self.usage(user.id)

    async def usage(self, user_id: str) -> Usage:
        """The user's tokens of the last USAGE_DAYS UTC days (by this clock), and budget."""
        today = utc_day(self.clock())
        found = {d.day: d for d in await self._store.usage_days(user_id, today - timedelta(USAGE_DAYS - 1))}
        days = [today - timedelta(n) for n in range(USAGE_DAYS)]
        own = await self._store.token_budget(user_id)
        budget = own if own is not None else self.settings.write.daily_token_budget
        return Usage([found.get(d) or DayUsage(d, TokenUsage()) for d in days], budget, own)

    async def all_usage(self) -> list[tuple[User, Usage]]:
        """Everyone's usage, in name order (the administrator's view)."""
        return [(user, await self.usage(user.id)) for user in await self._store.list_users()]

    async def over_budget(self, user_id: str, now: datetime) -> bool:
        """Whether the user's tokens of `now`'s UTC day have reached their budget."""
        budget = await self.token_budget(user_id)
        if budget is None:
            return False
        today = utc_day(now)
        return (
            sum(d.usage.total for d in await self._store.usage_days(user_id, today) if d.day == today)
            >= budget
        )

    async def gate(self, user_id: str) -> GatePolicy:
        """The person's sensitive-data gate (NotFound for no such user)."""
        user = await self._store.get_user(user_id)
        if user is None:
            raise NotFound(f"no user {user_id}")
        return user.gate

    async def set_gate(self, user_id: str, changes: dict[str, str]) -> User:
        """Change the gate's action for some categories (InvalidInput, changing nothing, for an
        unknown category or action)."""
        return await self._store.update_user(user_id, gate_changes=changes)

    async def memory_enabled(self, user: str | User) -> bool:
        """Whether memory is on for the user (by id, or as read already): the server's mode,
        then the person's own switch."""
        found = await self._store.get_user(user) if isinstance(user, str) else user
        return memory_enabled(await self.server_mode(), found.memory_enabled if found else None)
