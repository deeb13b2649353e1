"""Memories: list, write, correct, end, retract, restore, purge, history, search, and the
"Still true?" list.

The person's own view is everything they own (`Scope(user, all_agents=True)`),
or what one of their agents sees when `agent_id` is given. Search acts as an
assistant would: the default agent unless `agent_id` says otherwise.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi import status as http

from ...auth import CurrentUser
from ...domain import Category, InvalidInput, RecallVia, Status
from ...http.responses import errors
from ...schemas import (
    EventPublic,
    FactCreate,
    FactPublic,
    FactUpdate,
    HitPublic,
    Page,
    RecallsPublic,
    SearchRequest,
    SearchResults,
    StaleList,
    StatusFilter,
)
from ..deps import AccountsDep, MemoryDep
from ..params import AgentFilter, AsOf, FactIdPath, Limit, Offset, assistant_scope, own_scope, view_scope

router = APIRouter(prefix="/v1/memories", tags=["memories"], responses=errors(404, 409))

MAX_MATCHES = 1000  # a text query pages through at most this many of the best matches

StatusQuery = Annotated[
    list[StatusFilter] | None,
    Query(description="One or more statuses (repeat the parameter), or 'all'. Default: active."),
]
TextQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=2000, description="Only memories that match this text (active ones)."),
]


def _statuses(given: list[StatusFilter] | None) -> tuple[Status, ...] | None:
    if not given:
        return (Status.ACTIVE,)
    if StatusFilter.ALL in given:
        return None
    return tuple(dict.fromkeys(Status(s.value) for s in given))


@router.get("")
async def list_memories(
    memory: MemoryDep,
    accounts: AccountsDep,
    user: CurrentUser,
    agent_id: AgentFilter = None,
    status: StatusQuery = None,
    q: TextQuery = None,
    as_of: AsOf = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[FactPublic]:
    """Your memories, newest first; with `as_of`, as they were believed then."""
    scope = await view_scope(accounts, user, agent_id)
    statuses = _statuses(status)
    if q is not None:
        if statuses != (Status.ACTIVE,):
            raise InvalidInput("q searches active memories only; leave out status")
        hits = await memory.search(q, scope, as_of=as_of, limit=min(offset + limit + 1, MAX_MATCHES))
        facts = [h.fact for h in hits][offset:]
    else:
        facts = await memory.list(scope, as_of=as_of, statuses=statuses, limit=limit + 1, offset=offset)
    return Page[FactPublic].of([FactPublic.of(f) for f in facts], limit, offset)


@router.post(
    "",
    status_code=http.HTTP_201_CREATED,
    responses={200: {"model": FactPublic, "description": "A restatement: the existing memory, reinforced."}},
)
async def create_memory(
    memory: MemoryDep, accounts: AccountsDep, user: CurrentUser, body: FactCreate, response: Response
) -> FactPublic:
    """Remember something you wrote yourself (confidence 1.0). Restating an active
    memory reinforces it instead: that answers 200 with the existing memory."""
    scope = await assistant_scope(accounts, user, body.agent_id)
    fact = await memory.add(
        scope,
        body.text,
        category=body.category,
        pinned=body.pinned,
        valid_from=body.valid_from,
        valid_to=body.valid_to,
        actor="user",
    )
    if fact.version > 1:
        response.status_code = http.HTTP_200_OK
    return FactPublic.of(fact)


@router.post("/search")
async def search_memories(
    memory: MemoryDep, accounts: AccountsDep, user: CurrentUser, body: SearchRequest
) -> SearchResults:
    """What an assistant would recall for the query, best first, with why each came back."""
    scope = await assistant_scope(accounts, user, body.agent_id)
    on = await accounts.memory_enabled(user)
    hits = await memory.recall(
        body.query, scope, as_of=body.as_of, limit=body.limit, memory_on=on, via=RecallVia.API
    )
    return SearchResults(items=[HitPublic.of(h) for h in hits], enable_memory=on)


@router.get("/stale")
async def stale_memories(memory: MemoryDep, user: CurrentUser, limit: Limit = 50) -> StaleList:
    """Still true? Your active memories with no end that were neither said again (nor kept)
    nor given to an assistant for their category's time (MNEMO_STALE__<CATEGORY>, days), the
    longest unheard first. Keep one, end it now or erase it: nothing ends because of age."""
    found = await memory.stale(own_scope(user.id), limit=limit)
    after = memory.settings.stale.model_dump()
    return StaleList(
        items=[FactPublic.of(f) for f in found],
        review_stale=user.review_stale,
        after_days={Category(c): days for c, days in after.items()},
    )


@router.get("/{fact_id}")
async def get_memory(memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath) -> FactPublic:
    """One memory as it is now, with its version (an edit names it), whatever its status."""
    return FactPublic.of(await memory.get(own_scope(user.id), fact_id))


@router.patch("/{fact_id}")
async def update_memory(
    memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath, body: FactUpdate
) -> FactPublic:
    """Correct a memory in place: same id and created date; the old text stays in its history.
    `version` must be the one you saw (409 otherwise: fetch it again)."""
    fact = await memory.update(
        own_scope(user.id),
        fact_id,
        version=body.version,
        text=body.text,
        category=body.category,
        pinned=body.pinned,
        valid_to=body.end,
        actor="user",
    )
    return FactPublic.of(fact)


@router.delete("/{fact_id}")
async def delete_memory(
    memory: MemoryDep,
    user: CurrentUser,
    fact_id: FactIdPath,
    purge: Annotated[bool, Query(description="Erase its text everywhere (cannot be undone).")] = False,
    version: Annotated[int | None, Query(ge=1, description="The version you saw (409 if stale).")] = None,
    *,
    response: Response,
) -> FactPublic:
    """Retract a memory: it stays as a tombstone (restore brings it back). With
    `purge=true` its text is erased here, in its history and in the messages it was learnt
    from (as POST /v1/erasures does); an event says so, and the `Location` header names the
    signed receipt (`X-Mnemo-Lingering`, when the erased text stays in the database's files
    for a while, says why: see the receipt's `lingering`)."""
    scope = own_scope(user.id)
    if purge:
        fact, receipt = await memory.purge(scope, fact_id, actor="user", version=version)
        response.headers["Location"] = f"/v1/erasures/{receipt.id}"
        lingering = await memory.lingering()
        if lingering:
            response.headers["X-Mnemo-Lingering"] = lingering
        return FactPublic.of(fact)
    return FactPublic.of(await memory.retract(scope, fact_id, actor="user", version=version))


@router.post("/{fact_id}/restore")
async def restore_memory(memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath) -> FactPublic:
    """Bring back a retracted, superseded or rejected memory."""
    return FactPublic.of(await memory.restore(own_scope(user.id), fact_id, actor="user"))


@router.post("/{fact_id}/keep")
async def keep_memory(memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath) -> FactPublic:
    """Say an active memory is still true: its clock starts again, and it leaves the "Still
    true?" list for its category's time (a new version; no new mention is counted). 422 for a
    memory that is not active or has ended (clear or move its end to bring it back)."""
    return FactPublic.of(await memory.keep(own_scope(user.id), fact_id, actor="user"))


@router.get("/{fact_id}/recalls")
async def memory_recalls(
    memory: MemoryDep, accounts: AccountsDep, user: CurrentUser, fact_id: FactIdPath
) -> RecallsPublic:
    """When an assistant was last given the memory, which one, and how often in the last 7 days."""
    found = await memory.recalls(own_scope(user.id), fact_id)
    kept = memory.settings.recall_log_days
    return RecallsPublic.of(found, await accounts.agents(user.id), user.record_recalls, kept)


@router.get("/{fact_id}/history")
async def memory_history(memory: MemoryDep, user: CurrentUser, fact_id: FactIdPath) -> list[EventPublic]:
    """Every change to the memory, oldest first (a purged memory's events keep no text)."""
    return [EventPublic.of(e) for e in await memory.history(own_scope(user.id), fact_id)]
