"""The review queue: memories the extractor proposed but did not apply (policy review or guarded)."""

from __future__ import annotations

from fastapi import APIRouter

from ...auth import CurrentUser
from ...domain import Scope, Status
from ...http.responses import errors
from ...schemas import FactPublic, Page, ReasonBody
from ..deps import AccountsDep, MemoryDep
from ..params import AgentFilter, FactIdPath, Limit, Offset, view_scope

router = APIRouter(prefix="/v1/review", tags=["review"], responses=errors(404, 409))


@router.get("")
async def list_candidates(
    memory: MemoryDep,
    accounts: AccountsDep,
    user: CurrentUser,
    agent_id: AgentFilter = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[FactPublic]:
    """Candidates awaiting your decision, newest first."""
    scope = await view_scope(accounts, user, agent_id)
    facts = await memory.list(scope, statuses=(Status.CANDIDATE,), limit=limit + 1, offset=offset)
    return Page[FactPublic].of([FactPublic.of(f) for f in facts], limit, offset)


@router.post("/{fact_id}/approve")
async def approve(memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath) -> FactPublic:
    """Accept a candidate; one proposed as a replacement supersedes the memory it replaces.
    When an active memory of the same agent says the same already, that memory is reinforced
    and answered instead, and the candidate is closed as superseded by it. 422 when the
    candidate's agent was deleted."""
    return FactPublic.of(await memory.approve(Scope(user.id, all_agents=True), fact_id, actor="user"))


@router.post("/{fact_id}/reject")
async def reject(
    memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath, body: ReasonBody | None = None
) -> FactPublic:
    """Turn a candidate down; it is kept as rejected (restore can still bring it back)."""
    reason = body.reason if body else None
    return FactPublic.of(
        await memory.reject(Scope(user.id, all_agents=True), fact_id, reason=reason, actor="user")
    )
