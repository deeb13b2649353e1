"""Parameters the routes share: ids in paths, paging, filters, and whose memory a request reads."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from .. import keys
from ..accounts import Accounts
from ..domain import NotFound, Scope, User, known_id
from ..shapes import Id, UtcTime

# Ids in paths: one that cannot exist answers like one that does not (404).


def _fact_id(fact_id: str) -> str:
    return known_id(fact_id, "memory")


def _agent_id(agent_id: str) -> str:
    return known_id(agent_id, "agent")


def _job_id(job_id: str) -> str:
    return known_id(job_id, "job")


def _user_id(user_id: str) -> str:
    return known_id(user_id, "user")


def _turn_id(turn_id: str) -> str:
    return known_id(turn_id, "turn")


def _key_id(key_id: str) -> str:
    if not keys.is_key_id(key_id):
        raise NotFound(f"no API key {key_id[:80]!r}")
    return key_id


FactIdPath = Annotated[str, Depends(_fact_id)]
AgentIdPath = Annotated[str, Depends(_agent_id)]
JobIdPath = Annotated[str, Depends(_job_id)]
TurnIdPath = Annotated[str, Depends(_turn_id)]
KeyIdPath = Annotated[str, Depends(_key_id)]
UserIdPath = Annotated[str, Depends(_user_id)]

Limit = Annotated[int, Query(ge=1, le=200, description="At most this many items.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Skip this many items.")]
AgentFilter = Annotated[Id | None, Query(description="Only what this agent sees.")]
AsOf = Annotated[UtcTime | None, Query(description="As memory stood then (ISO date-time; naive = UTC).")]


def own_scope(user_id: str) -> Scope:
    """The person's own view of everything they own."""
    return Scope(user_id, all_agents=True)


async def view_scope(accounts: Accounts, user: User, agent_id: str | None) -> Scope:
    """The person's own view: everything they own, or only what one of their agents sees."""
    if agent_id is None:
        return Scope(user.id, all_agents=True)
    await accounts.agent(user.id, agent_id)  # another user's agent: 404
    return Scope(user.id, agent_id)


async def assistant_scope(accounts: Accounts, user: User, agent_id: str | None) -> Scope:
    """What an assistant acts as: the default one, or one of the user's agents (another user's
    agent: 404), with what it may read decided once for the request (`Scope.visible_to`)."""
    return Scope(user.id, agent_id).visible_to(await accounts.agents(user.id))
