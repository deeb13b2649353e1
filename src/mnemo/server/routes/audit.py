"""The audit log: every change to your memories, hash-chained so tampering shows."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ...auth import CurrentUser
from ...domain import Scope
from ...http.responses import errors
from ...schemas import AuditReportPublic, EventPublic, Id, Page
from ..deps import MemoryDep
from ..params import Limit, Offset

router = APIRouter(prefix="/v1/audit", tags=["audit"], responses=errors(404))


@router.get("")
async def list_events(
    memory: MemoryDep,
    user: CurrentUser,
    fact_id: Annotated[Id | None, Query(description="Only this memory's events.")] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[EventPublic]:
    """Your events, newest first."""
    if fact_id is not None:
        events = await memory.history(Scope(user.id, all_agents=True), fact_id)
    else:
        events = await memory.events(user.id)
    newest = events[::-1][offset : offset + limit + 1]
    return Page[EventPublic].of([EventPublic.of(e) for e in newest], limit, offset)


@router.get("/verify")
async def verify(memory: MemoryDep, user: CurrentUser) -> AuditReportPublic:
    """Check every link of your chain and every event's content."""
    return AuditReportPublic.of(await memory.verify_audit(user.id))
