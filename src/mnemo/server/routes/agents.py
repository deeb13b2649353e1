"""Agents: your assistants, each with its own memories, and what each may read."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi import status as http

from ...auth import CurrentUser
from ...http.responses import errors
from ...schemas import AgentCreate, AgentDeleted, AgentPublic, AgentUpdate
from ..deps import AccountsDep, MemoryDep
from ..params import AgentIdPath

router = APIRouter(prefix="/v1/agents", tags=["agents"], responses=errors(404, 409))


@router.get("")
async def list_agents(accounts: AccountsDep, user: CurrentUser) -> list[AgentPublic]:
    """The person's agents (their assistants), in name order."""
    return [AgentPublic.of(a) for a in await accounts.agents(user.id)]


@router.post("", status_code=http.HTTP_201_CREATED)
async def create_agent(accounts: AccountsDep, user: CurrentUser, body: AgentCreate) -> AgentPublic:
    """A new agent (an assistant of the person's, named on the proxy by `X-Mnemo-Agent` or as the
    model). A private agent's memories stay out of the default assistant's reach;
    `reads_default` lets the agent read the default assistant's memories too."""
    agent = await accounts.create_agent(
        user.id,
        body.name,
        private=body.private,
        reads_default=body.reads_default,
        persona=body.persona,
        upstream_model=body.upstream_model,
    )
    return AgentPublic.of(agent)


@router.patch("/{agent_id}")
async def update_agent(
    accounts: AccountsDep, user: CurrentUser, agent_id: AgentIdPath, body: AgentUpdate
) -> AgentPublic:
    """Change the fields given; null clears persona or upstream_model."""
    return AgentPublic.of(await accounts.update_agent(user.id, agent_id, **body.changes()))


@router.delete("/{agent_id}")
async def delete_agent(memory: MemoryDep, user: CurrentUser, agent_id: AgentIdPath) -> AgentDeleted:
    """Delete an agent; its active memories are retracted (kept as tombstones, not erased)."""
    agent, retracted = await memory.delete_agent(user.id, agent_id, actor="user")
    return AgentDeleted(agent=AgentPublic.of(agent), retracted=retracted)
