"""Finished turns handed to mnemo, and the jobs that learn from them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictBool, StringConstraints

from ..domain import (
    Job,
    JobStatus,
    StoredTurn,
    TurnState,
)
from ..shapes import ConversationId, Id, NoNul
from .base import Request


class MessageIn(Request):
    role: Literal["system", "user", "assistant"]
    content: Annotated[str, StringConstraints(max_length=100_000), *NoNul]


class TurnCreate(Request):
    messages: list[MessageIn] = Field(min_length=1, max_length=200)
    conversation_id: ConversationId | None = None
    agent_id: Id | None = None
    automation: StrictBool = Field(
        False, description="Turns of scheduled tasks and the like are never learnt from."
    )


class JobPublic(BaseModel):
    id: str
    agent_id: str | None
    conversation_id: str
    message_ids: list[str]
    status: JobStatus
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    finished_at: datetime | None
    error: str | None = Field(description="Why the last attempt failed (kept on a failed job).")
    result: dict[str, Any] | None

    @classmethod
    def of(cls, job: Job) -> JobPublic:
        return cls(
            id=job.id,
            agent_id=job.agent_id,
            conversation_id=job.conversation_id,
            message_ids=list(job.message_ids),
            status=job.status,
            attempts=job.attempts,
            created_at=job.created_at,
            next_attempt_at=job.next_attempt_at,
            finished_at=job.finished_at,
            error=job.last_error,
            result=job.result,
        )


class TurnResult(BaseModel):
    queued: bool
    reason: str | None = None
    job: JobPublic | None = None


class TurnFacts(BaseModel):
    """What a turn did to memory, as fact ids (a superseded fact is the one it replaced)."""

    created: list[str]
    updated: list[str]
    superseded: list[str]
    reinforced: list[str]
    retracted: list[str]
    held: list[str] = Field(description="Created as candidates, waiting for review.")


class TurnPublic(BaseModel):
    id: str = Field(description="The turn's id: its job's, as POST /v1/turns and X-Mnemo-Turn give it.")
    agent_id: str | None
    conversation_id: str
    message_ids: list[str]
    state: TurnState
    reason: str | None = Field(
        description="failed (or queued again after a failure): model_unreachable, invalid_reply, timeout,"
        " refused_by_policy or internal; skipped: automation, memory_off or agent_deleted."
    )
    facts: TurnFacts = Field(description="learnt or waiting_for_model: what it learnt so far.")
    attempts: int
    created_at: datetime
    finished_at: datetime | None
    learn_at: datetime | None = Field(
        description="over_budget: when it will be learnt (the next UTC midnight); otherwise null."
    )
    dropped: dict[str, int] = Field(
        default_factory=dict,
        description="What the chat model proposed that was not kept, by why, and how many: an item"
        " with no text or that is not an object, one over the per-turn limit, one the sensitive-data"
        " gate or the review policy refused, words you erased. Never the text itself.",
    )

    @classmethod
    def of(cls, turn: StoredTurn) -> TurnPublic:
        return cls(
            id=turn.id,
            agent_id=turn.agent_id,
            conversation_id=turn.conversation_id,
            message_ids=list(turn.message_ids),
            state=turn.state,
            reason=turn.reason,
            facts=TurnFacts(**turn.facts),
            attempts=turn.attempts,
            created_at=turn.created_at,
            finished_at=turn.finished_at,
            learn_at=turn.learn_at,
            dropped=dict(turn.dropped),
        )
