"""Erasures: what one would take, the request to carry one out, and its signed receipt."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, Field, StrictBool, StringConstraints, model_validator

from ...domain import Receipt
from ...erasure import CONFIRM_EVERYTHING as EVERYTHING
from ...erasure import Plan
from ...shapes import ConversationId, Id, NoNul
from .base import Request
from .facts import FactPublic

MessageId = Annotated[str, StringConstraints(min_length=1, max_length=200), *NoNul]


class MessageRef(BaseModel):
    conversation_id: str
    message_id: str


class ErasurePlanPublic(BaseModel):
    kind: str = Field(description="memory, conversation, selection or everything.")
    memories: list[FactPublic] = Field(description="The memories whose text is erased.")
    messages: list[MessageRef] = Field(description="The messages whose text is erased (a marker stays).")
    conversations: list[str] = Field(description="The conversations removed whole.")
    keys: bool = Field(description="Every API key goes too, but the one in use (everything).")
    kept_memories: list[FactPublic] = Field(
        description="Memories that stay, though learnt from an erased message or conversation: they "
        "lose the words they came from."
    )

    @classmethod
    def of(cls, plan: Plan) -> ErasurePlanPublic:
        return cls(
            kind=plan.kind,
            memories=[FactPublic.of(f) for f in plan.facts],
            messages=[MessageRef(conversation_id=c, message_id=m) for c, m in plan.messages],
            conversations=list(plan.conversations),
            keys=plan.keys,
            kept_memories=[FactPublic.of(f) for f in plan.cited_by],
        )


class ErasureCreate(Request):
    """Name one kind: a memory; a conversation (`with_memories` to erase what was learnt from
    it); what you ticked about a subject (`memory_ids`, `message_ids`: see GET
    /v1/erasures/about); or `everything`, with `confirm` set to "erase everything"."""

    memory_id: Id | None = None
    conversation_id: ConversationId | None = None
    with_memories: StrictBool = False
    memory_ids: Annotated[list[Id], Field(default_factory=list, max_length=10_000)]
    message_ids: Annotated[list[MessageId], Field(default_factory=list, max_length=10_000)]
    everything: StrictBool = False
    confirm: Annotated[str, Field(max_length=100)] | None = None

    @model_validator(mode="after")
    def one_thing(self) -> Self:
        kinds = [
            self.memory_id is not None,
            self.conversation_id is not None,
            bool(self.memory_ids or self.message_ids),
            self.everything,
        ]
        if sum(kinds) != 1:
            raise ValueError(
                "name exactly one of memory_id, conversation_id, memory_ids/message_ids and everything"
            )
        if self.with_memories and self.conversation_id is None:
            raise ValueError("with_memories goes with conversation_id")
        if self.everything and self.confirm != EVERYTHING:
            raise ValueError(f"erasing everything needs confirm: {EVERYTHING!r}")
        if self.confirm is not None and not self.everything:
            raise ValueError("confirm goes with everything")
        return self


class MessageFound(BaseModel):
    conversation_id: str
    message_id: str
    text: str


class About(BaseModel):
    """Everything about a subject that holds its words: tick what goes."""

    memories: list[FactPublic]
    messages: list[MessageFound]


class ReceiptPublic(BaseModel):
    """A receipt as the person keeps it: `body` and `signature` are what
    `mnemo audit verify-receipt` and POST /v1/erasures/verify check."""

    id: str
    kind: str
    at: str
    body: dict[str, Any]
    signature: str

    @classmethod
    def of(cls, r: Receipt) -> ReceiptPublic:
        return cls(id=r.id, kind=r.kind, at=r.at.isoformat(), body=r.body, signature=r.signature)


class ReceiptKey(BaseModel):
    algorithm: str = "Ed25519"
    public_key: str = Field(description="Base64 of the raw 32-byte public key that signs receipts.")


class ReceiptCheck(BaseModel):
    valid: bool
    problems: list[str]
