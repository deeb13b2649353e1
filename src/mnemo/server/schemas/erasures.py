"""Erasures: what one would take, the request to carry one out, and its signed receipt."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field, StrictBool, model_validator

from ...domain import Receipt
from ...erasure import Plan
from ...shapes import ConversationId, Id
from .base import Request
from .facts import FactPublic


class MessageRef(BaseModel):
    conversation_id: str
    message_id: str


class ErasurePlanPublic(BaseModel):
    kind: str = Field(description="memory or conversation.")
    memories: list[FactPublic] = Field(description="The memories whose text is erased.")
    messages: list[MessageRef] = Field(description="The messages whose text is erased (a marker stays).")
    conversations: list[str] = Field(description="The conversations removed whole.")
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
            kept_memories=[FactPublic.of(f) for f in plan.cited_by],
        )


class ErasureCreate(Request):
    """Name one memory, or one conversation (with `with_memories` to erase what was learnt from it)."""

    memory_id: Id | None = None
    conversation_id: ConversationId | None = None
    with_memories: StrictBool = False

    @model_validator(mode="after")
    def one_thing(self) -> Self:
        if (self.memory_id is None) == (self.conversation_id is None):
            raise ValueError("name exactly one of memory_id and conversation_id")
        if self.with_memories and self.conversation_id is None:
            raise ValueError("with_memories goes with conversation_id")
        return self


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
