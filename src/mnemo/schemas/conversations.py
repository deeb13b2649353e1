"""Conversations: the list, and one conversation with its messages, turns and what they taught."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, StrictBool

from ..domain import ConversationSummary, ConversationView, Message
from ..shapes import Id
from .base import Request
from .facts import FactPublic
from .jobs import TurnPublic


class ConversationSummaryPublic(BaseModel):
    id: str
    agent_id: str | None = Field(description="The assistant it was had with; null: the default one.")
    created_at: datetime = Field(description="When it began (its first turn was stored).")
    messages: int = Field(description="How many messages it holds (erased ones included, without text).")
    last_at: datetime | None = Field(description="When its last message was said.")
    remember: bool = Field(
        True,
        description="Your switch: false, its later turns are answered but neither stored nor learnt from.",
    )
    opening: str | None = Field(
        description="The start of its first message of yours not erased, as stored (what the"
        " sensitive-data gate keeps out is masked there)."
    )

    @classmethod
    def of(cls, c: ConversationSummary) -> ConversationSummaryPublic:
        return cls(
            id=c.id,
            agent_id=c.agent_id,
            created_at=c.created_at,
            messages=c.messages,
            last_at=c.last_at,
            opening=c.opening,
            remember=c.remember,
        )


class ConversationUpdate(Request):
    remember: StrictBool = Field(
        description="false: its later turns (through the chat proxy, POST /v1/turns, Try it) are answered"
        " with recall but neither stored nor learnt from, and backfill leaves it alone; what it holds"
        " already stays until you erase it. A conversation not stored yet is created, so that its first"
        " turn already knows."
    )
    agent_id: Id | None = Field(
        None, description="A new conversation's assistant (default: the default one)."
    )


class MessagePublic(BaseModel):
    id: str | None
    role: str = Field(description="Who said it: user, assistant, system or tool.")
    content: str = Field(description="As stored; empty once erased.")
    at: datetime | None = Field(description="When it was said.")
    erased_at: datetime | None = Field(description="When its text was erased; null: it was not.")

    @classmethod
    def of(cls, m: Message) -> MessagePublic:
        return cls(id=m.id, role=m.role, content=m.content, at=m.at, erased_at=m.erased_at)


class ConversationPublic(BaseModel):
    conversation: ConversationSummaryPublic
    messages: list[MessagePublic] = Field(description="Every message, oldest first.")
    turns: list[TurnPublic] = Field(
        description="Its turns, newest first: each one's state and the ids of what it taught."
    )
    memories: list[FactPublic] = Field(
        description="The memories its turns taught, as they are now (an erased one without its text)."
    )

    @classmethod
    def of(cls, view: ConversationView) -> ConversationPublic:
        return cls(
            conversation=ConversationSummaryPublic.of(view.summary),
            messages=[MessagePublic.of(m) for m in view.messages],
            turns=[TurnPublic.of(t) for t in view.turns],
            memories=[FactPublic.of(f) for f in view.memories],
        )
