"""Memories, their history, the audit log and search results."""

from __future__ import annotations

from datetime import datetime
from types import EllipsisType
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import BaseModel, Field, StrictBool, StringConstraints, model_validator

from ..domain import (
    Agent,
    AuditReport,
    Category,
    Event,
    Fact,
    RecallSummary,
    RecallVia,
    Status,
    utcnow,
)
from ..shapes import (
    ArmPublic,
    FactText,
    FactVersion,
    Id,
    NoNul,
    QueryText,
    SearchLimit,
    UtcTime,
    reasons_of,
)
from .base import Request

if TYPE_CHECKING:
    from ..recall.fuse import Hit


class SourcePublic(BaseModel):
    kind: str = Field(
        description="What the fact rests on: user_message, document (pasted by the user), "
        "assistant_message (or no message the model could name), api, user_edit, import, backfill, mcp."
    )
    conversation_id: str | None
    message_ids: list[str]
    speaker: str | None
    extractor_model: str | None
    prompt_version: str | None
    origin: dict[str, Any] | None = Field(
        None,
        description="An imported fact's place in the tool it came from: tool (mem0, khoj, markdown), "
        "id there, and details it held that a fact has no field for.",
    )


class FactPublic(BaseModel):
    id: str
    agent_id: str | None
    text: str = Field(description="Empty once purged.")
    category: Category
    status: Status
    confidence: float = Field(
        description="0 to 1. A learnt fact's is capped by what it rests on (source.kind): "
        "document 0.6, assistant_message 0.4."
    )
    version: int
    pinned: bool
    purged: bool
    mentions: int
    created_at: datetime
    recorded_at: datetime | None
    last_seen_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None = Field(
        description="When it stops being true (said, or set by the person); null: no end known."
    )
    ended: bool = Field(
        False,
        description="Active, and past its valid_to: no longer recalled as true now (still found for"
        " the time it held, with as_of); clear or move valid_to to bring it back.",
    )
    retired_at: datetime | None
    supersedes: str | None
    superseded_by: str | None
    embedding_model: str | None
    source: SourcePublic

    @classmethod
    def of(cls, fact: Fact, now: datetime | None = None) -> FactPublic:
        data = {k: v for k, v in fact.snapshot().items() if k in cls.model_fields}
        return cls.model_validate({**data, "ended": fact.ended(now or utcnow())})


class StaleList(BaseModel):
    """Still true? Memories that may have gone stale. Keep one (POST /v1/memories/{id}/keep),
    end it now (PATCH valid_to) or erase it (DELETE ?purge=true); nothing ends because of age."""

    items: list[FactPublic] = Field(
        description="Active memories with no end, neither said again (nor kept) nor given to an"
        " assistant for their category's time: the longest unheard first."
    )
    review_stale: bool = Field(description="Your switch for this list; while it is off, the list is empty.")
    after_days: dict[Category, int] = Field(
        description="For each category, the days after which an unheard memory is offered; 0: never."
    )


class FactCreate(Request):
    text: FactText
    category: Category = Category.OTHER
    pinned: StrictBool = False
    valid_from: UtcTime | None = None
    valid_to: UtcTime | None = Field(
        None, description="When it stops being true, if it will (after valid_from)."
    )
    agent_id: Id | None = Field(None, description="The agent it belongs to; the default assistant if absent.")


class FactUpdate(Request):
    version: FactVersion = Field(description="The version you saw; a stale one answers 409.")
    text: FactText | None = None
    category: Category | None = None
    pinned: StrictBool | None = None
    valid_to: UtcTime | None = Field(
        None, description="When it stops being true: a time sets or moves the end, null clears it."
    )

    @model_validator(mode="after")
    def _something(self) -> Self:
        changed = [f for f in ("text", "category", "pinned") if getattr(self, f) is not None]
        if not changed and "valid_to" not in self.model_fields_set:  # valid_to: null clears the end
            raise ValueError("give at least one of text, category, pinned, valid_to")
        return self

    @property
    def end(self) -> datetime | EllipsisType | None:
        """The end to set (None: clear it), or `...` when the request leaves it as it is."""
        return self.valid_to if "valid_to" in self.model_fields_set else ...


class ReasonBody(Request):
    reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=500), *NoNul] | None = None


class RecallPublic(BaseModel):
    at: datetime
    agent_id: str | None = Field(description="The agent that recalled it; null: the default assistant.")
    agent_name: str | None = Field(description="Its name; null for the default assistant or a deleted agent.")
    via: RecallVia = Field(description="proxy (the chat proxy), api, mcp, or web (the page's Try it).")


class RecallsPublic(BaseModel):
    """How assistants recalled a memory lately (nothing when the recall log is off or empty)."""

    last: RecallPublic | None
    count: int = Field(description="How many times since `since` (the last 7 days).")
    since: datetime
    recording: bool = Field(description="Your switch of the recall log (PATCH /v1/me/settings).")
    kept_days: int = Field(description="How many days recalls are kept (MNEMO_RECALL_LOG_DAYS).")

    @classmethod
    def of(cls, s: RecallSummary, agents: list[Agent], recording: bool, kept_days: int) -> RecallsPublic:
        names = {a.id: a.name for a in agents}
        last = s.last
        return cls(
            last=None
            if last is None
            else RecallPublic(
                at=last.at, agent_id=last.agent_id, agent_name=names.get(last.agent_id or ""), via=last.via
            ),
            count=s.count,
            since=s.since,
            recording=recording,
            kept_days=kept_days,
        )


class EventPublic(BaseModel):
    seq: int
    at: datetime
    fact_id: str
    action: str
    actor: str
    reason: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    redacted: bool
    prev_hash: str
    hash: str

    @classmethod
    def of(cls, e: Event) -> EventPublic:
        return cls(
            seq=e.seq,
            at=e.at,
            fact_id=e.fact_id,
            action=str(e.action),
            actor=e.actor,
            reason=e.reason,
            before=e.before,
            after=e.after,
            redacted=e.redacted,
            prev_hash=e.prev_hash,
            hash=e.hash,
        )


class AuditReportPublic(BaseModel):
    ok: bool
    events: int
    problems: list[str]

    @classmethod
    def of(cls, report: AuditReport) -> AuditReportPublic:
        return cls(ok=report.ok, events=report.events, problems=list(report.problems))


class HitPublic(BaseModel):
    fact: FactPublic
    score: float = Field(
        description="The ranking stage's score (the learned ranker's, or the fallback fusion's):"
        " higher is better, comparable only within one recall; it may be negative."
    )
    reasons: dict[str, ArmPublic] = Field(description="Per recall arm: the rank and score it gave.")

    @classmethod
    def of(cls, hit: Hit) -> HitPublic:
        return cls(fact=FactPublic.of(hit.fact), score=hit.score, reasons=reasons_of(hit))


class SearchRequest(Request):
    query: QueryText
    agent_id: Id | None = None
    limit: SearchLimit | None = None
    as_of: UtcTime | None = None


class SearchResults(BaseModel):
    items: list[HitPublic]
    enable_memory: bool = Field(description="False: memory is off for you, so nothing is recalled.")
