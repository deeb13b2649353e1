"""Finished turns from any app, and the jobs that learn from them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi import status as http

from ...auth import CurrentUser
from ...domain import JobStatus, Message, NotRemembered, Turn, TurnState
from ...http.responses import errors
from ...schemas import JobPublic, Page, TurnCreate, TurnPublic, TurnResult
from ..deps import AccountsDep, MemoryDep
from ..params import JobIdPath, Limit, Offset, TurnIdPath, assistant_scope

router = APIRouter(prefix="/v1", tags=["turns"], responses=errors(404))


@router.post(
    "/turns",
    status_code=http.HTTP_202_ACCEPTED,
    responses={
        200: {
            "model": TurnResult,
            "description": "Not queued: memory is off, it is automation, or its conversation is not"
            " remembered.",
        }
    },
)
async def submit_turn(
    memory: MemoryDep, accounts: AccountsDep, user: CurrentUser, body: TurnCreate, response: Response
) -> TurnResult:
    """Hand mnemo a finished turn to learn from. It is stored and queued at once (202,
    with the job to follow); 200 with `queued: false`, nothing stored, when memory is off, it is
    automation, or you asked that its conversation not be remembered."""
    scope = await assistant_scope(accounts, user, body.agent_id)
    turn = Turn(
        scope,
        tuple(Message(m.role, m.content) for m in body.messages),
        conversation_id=body.conversation_id,
        automation=body.automation,
    )
    try:
        job = await memory.submit(turn)
    except NotRemembered:
        response.status_code = http.HTTP_200_OK
        return TurnResult(queued=False, reason="you asked that this conversation not be remembered")
    if job is None:
        response.status_code = http.HTTP_200_OK
        reason = "automation turns are never learnt from" if body.automation else "memory is off for you"
        return TurnResult(queued=False, reason=reason)
    return TurnResult(queued=True, job=JobPublic.of(job))


@router.get("/turns")
async def list_turns(
    memory: MemoryDep,
    user: CurrentUser,
    state: Annotated[TurnState | None, Query(description="Only turns in this state.")] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[TurnPublic]:
    """Your stored turns, newest first: each one's state, and what it learnt."""
    turns = await memory.turns(user.id, state=state, limit=limit + 1, offset=offset)
    return Page[TurnPublic].of([TurnPublic.of(t) for t in turns], limit, offset)


@router.get("/turns/{turn_id}")
async def get_turn(memory: MemoryDep, user: CurrentUser, turn_id: TurnIdPath) -> TurnPublic:
    """One stored turn: `queued`, `learning`, `learnt`, `waiting_for_model` (learnt only what
    was asked for explicitly, until a chat model is configured), `over_budget` (your tokens of
    the day are spent: learnt at `learn_at`, the next UTC midnight), `failed` or `skipped`, with
    a reason category, and the ids of the facts it created, updated, superseded, reinforced,
    retracted and held for review."""
    return TurnPublic.of(await memory.turn(user.id, turn_id))


@router.get("/jobs")
async def list_jobs(
    memory: MemoryDep,
    user: CurrentUser,
    status: Annotated[JobStatus | None, Query(description="Only jobs in this state.")] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[JobPublic]:
    """Your jobs, newest first."""
    jobs = await memory.jobs(user.id, status=status, limit=limit + 1, offset=offset)
    return Page[JobPublic].of([JobPublic.of(j) for j in jobs], limit, offset)


@router.get("/jobs/{job_id}")
async def get_job(memory: MemoryDep, user: CurrentUser, job_id: JobIdPath) -> JobPublic:
    """One job; a failed one says why in `error`."""
    return JobPublic.of(await memory.job(user.id, job_id))
