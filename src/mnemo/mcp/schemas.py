"""What the tools take and give back. The JSON schemas of these models are what a model
sees, so every field says what it means; constraints here are advertised and enforced."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from ..domain import Category, Event, Fact, Status, StatusFilter, utcnow
from ..recall.fuse import Hit
from ..shapes import ArmPublic, FactText, UtcTime, reasons_of

AgentRef = Annotated[
    str | None,
    Field(
        description="One of the person's agents, by id or name. Leave it out to act as their "
        "default assistant (usually right)."
    ),
]
FactRef = Annotated[str, Field(description="The memory's id, as recall or list_memories gave it.")]
Reason = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberArgs(Args):
    text: Annotated[
        FactText,
        Field(
            description="One self-contained fact about the person, in their own voice and first "
            "person: 'I am allergic to peanuts', 'My sister Ana lives in Porto'. One fact per call."
        ),
    ]
    category: Annotated[Category, Field(description="What kind of fact it is.")] = Category.OTHER
    valid_to: Annotated[
        UtcTime | None,
        Field(
            description="When it stops being true, if the person said so ('I am in Lisbon this week': "
            "the Monday after, 00:00 UTC); leave it out for anything with no end."
        ),
    ] = None
    agent: AgentRef = None


class RecallArgs(Args):
    query: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=4000),
        Field(description="What you want to know, in plain words: a question or the topic at hand."),
    ]
    agent: AgentRef = None
    limit: Annotated[
        int | None, Field(ge=1, le=50, description="At most this many memories (default: the server's).")
    ] = None


class ForgetArgs(Args):
    id: FactRef
    reason: Annotated[
        Reason | None, Field(description="Why, in a few words (kept in the memory's history).")
    ] = None


class ListArgs(Args):
    agent: Annotated[
        str | None,
        Field(description="Only what this agent (id or name) sees; leave it out for all of the person's."),
    ] = None
    status: Annotated[
        StatusFilter,
        Field(
            description="active: believed now (default); candidate: waiting for the person's review; "
            "superseded: replaced by a newer fact; retracted: forgotten; rejected: turned down in "
            "review; all: every one."
        ),
    ] = StatusFilter.ACTIVE
    limit: Annotated[int, Field(ge=1, le=200, description="At most this many, newest first.")] = 50
    offset: Annotated[int, Field(ge=0, le=1_000_000, description="Skip this many (to page).")] = 0


class HistoryArgs(Args):
    id: FactRef


class EditArgs(Args):
    id: FactRef
    version: Annotated[
        int,
        Field(
            ge=1,
            le=2**31 - 1,
            description="The memory's version as recall or list_memories gave it: the edit is refused "
            "if it changed since (read it again, then decide).",
        ),
    ]
    text: Annotated[
        FactText | None,
        Field(description="The corrected text, in the person's voice; leave it out to keep the text."),
    ] = None
    category: Annotated[Category | None, Field(description="A new category; leave it out to keep it.")] = None
    valid_to: Annotated[
        UtcTime | None,
        Field(
            description="When it stops being true (set or move its end); null clears the end (true "
            "again, with no end known); leave it out to keep it."
        ),
    ] = None
    reason: Annotated[
        Reason | None, Field(description="Why, in a few words (kept in the memory's history).")
    ] = None

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not {"text", "category", "valid_to"} & self.model_fields_set:
            raise ValueError("give text, category and/or valid_to to change")
        return self


class MemoryItem(BaseModel):
    """A memory as the tools show it."""

    id: str
    text: str
    category: Category
    status: Status
    pinned: bool = Field(description="Pinned by the person: always recalled.")
    agent: str | None = Field(description="The agent it belongs to; null: the default assistant.")
    created_at: datetime = Field(description="When it was first recorded.")
    valid_from: datetime | None = Field(description="Since when it is true, when known.")
    valid_to: datetime | None = Field(description="Until when it is true; null: no end known.")
    version: int = Field(1, description="Its version: pass it to edit, which refuses a changed memory.")
    ended: bool = Field(
        False, description="Past its end: no longer true now (found only for the time it held)."
    )

    @classmethod
    def of(cls, fact: Fact, agent_names: dict[str, str]) -> MemoryItem:
        return cls(
            id=fact.id,
            text=fact.text,
            category=fact.category,
            status=fact.status,
            pinned=fact.pinned,
            agent=agent_names.get(fact.agent_id, fact.agent_id) if fact.agent_id else None,
            created_at=fact.created_at,
            valid_from=fact.valid_from,
            valid_to=fact.valid_to,
            version=fact.version,
            ended=fact.ended(utcnow()),
        )


Outcome = Literal["created", "reinforced", "held for review"]


class Remembered(BaseModel):
    outcome: Outcome = Field(
        description="created: a new memory; reinforced: it was already known, and now counts once more; "
        "held for review: the person reviews new memories first (or the text reads as an instruction to an "
        "assistant), so it is recalled once they approve it."
    )
    memory: MemoryItem


class RecalledItem(MemoryItem):
    score: float = Field(
        description="How strongly it was recalled: higher is better, comparable only within one recall."
    )
    reasons: dict[str, ArmPublic] = Field(
        description="Why it came back, per recall arm, with its rank there: semantic (close in "
        "meaning), topic (close in meaning once the names in the query are set aside), lexical "
        "(shares words), parts (close in meaning to a part of a question about several things), "
        "time (said or true in the time the query names), recency (recently confirmed), pinned (always "
        "recalled)."
    )

    @classmethod
    def of_hit(cls, hit: Hit, agent_names: dict[str, str]) -> RecalledItem:
        item = MemoryItem.of(hit.fact, agent_names)
        return cls(**item.model_dump(), score=hit.score, reasons=reasons_of(hit))


class Recalled(BaseModel):
    memories: list[RecalledItem] = Field(description="Best first.")
    memory_enabled: bool = Field(description="False: memory is off for the person, so nothing is recalled.")


class Forgotten(BaseModel):
    memory: MemoryItem
    note: str


class Edited(BaseModel):
    memory: MemoryItem = Field(description="The memory as it is now (same id, a new version).")


class MemoryPage(BaseModel):
    memories: list[MemoryItem]
    next_offset: int | None = Field(description="Pass as offset for the next page; null on the last.")


class HistoryEntry(BaseModel):
    at: datetime
    action: str = Field(
        description="create, edit, supersede, retract, restore, approve, reject, reinforce, pin or purge."
    )
    actor: str = Field(description="Who made the change: user, extractor, mcp, admin…")
    reason: str | None
    text_before: str | None
    text_after: str | None
    status_after: str | None

    @classmethod
    def of(cls, event: Event) -> HistoryEntry:
        before, after = event.before or {}, event.after or {}
        return cls(
            at=event.at,
            action=str(event.action),
            actor=event.actor,
            reason=event.reason,
            text_before=before.get("text"),
            text_after=after.get("text"),
            status_after=after.get("status"),
        )


class History(BaseModel):
    events: list[HistoryEntry] = Field(description="Oldest first.")
