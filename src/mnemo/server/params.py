"""Parameters the routes share: ids in paths, paging, filters, and whose memory a request reads."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Query

from ..domain import NotFound, Scope, User
from ..memory import Memory
from .schemas import Id, UtcTime, is_uuid

_KEY_ID = re.compile(r"^[0-9a-f]{16}$")


def _checked(value: str, what: str, valid: bool) -> str:
    """An id that cannot exist answers like one that does not: 404."""
    if not valid:
        raise NotFound(f"no {what} {value[:80]!r}")
    return value.lower()


def _fact_id(fact_id: str) -> str:
    return _checked(fact_id, "memory", is_uuid(fact_id))


def _agent_id(agent_id: str) -> str:
    return _checked(agent_id, "agent", is_uuid(agent_id))


def _job_id(job_id: str) -> str:
    return _checked(job_id, "job", is_uuid(job_id))


def _key_id(key_id: str) -> str:
    return _checked(key_id, "API key", bool(_KEY_ID.match(key_id)))


FactIdPath = Annotated[str, Depends(_fact_id)]
AgentIdPath = Annotated[str, Depends(_agent_id)]
JobIdPath = Annotated[str, Depends(_job_id)]
KeyIdPath = Annotated[str, Depends(_key_id)]

Limit = Annotated[int, Query(ge=1, le=200, description="At most this many items.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Skip this many items.")]
AgentFilter = Annotated[Id | None, Query(description="Only what this agent sees.")]
AsOf = Annotated[UtcTime | None, Query(description="As memory stood then (ISO date-time; naive = UTC).")]


async def view_scope(memory: Memory, user: User, agent_id: str | None) -> Scope:
    """The person's own view: everything they own, or only what one of their agents sees."""
    if agent_id is None:
        return Scope(user.id, all_agents=True)
    await memory.agent(user.id, agent_id)  # another user's agent: 404
    return Scope(user.id, agent_id)


async def assistant_scope(memory: Memory, user: User, agent_id: str | None) -> Scope:
    """What an assistant acts as: the default one, or one of the user's agents."""
    if agent_id is not None:
        await memory.agent(user.id, agent_id)
    return Scope(user.id, agent_id)
