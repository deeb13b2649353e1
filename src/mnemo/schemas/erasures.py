"""Erasures: what one would take, the request to carry one out, and its signed receipt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from ..domain import Receipt
from ..shapes import ConversationId, Id, NoNul
from .base import Request
from .facts import FactPublic

if TYPE_CHECKING:
    from ..erasure import Plan

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


class EraseMemory(Request):
    """One memory, with the messages it was learnt from."""

    memory_id: Id


class EraseConversation(Request):
    """One conversation; `with_memories`: the memories learnt from it too."""

    conversation_id: ConversationId
    with_memories: StrictBool = False


class EraseTicked(Request):
    """What you ticked about a subject (see GET /v1/erasures/about): at least one id."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": ["memory_ids"], "properties": {"memory_ids": {"minItems": 1}}},
                {"required": ["message_ids"], "properties": {"message_ids": {"minItems": 1}}},
            ]
        },
    )
    memory_ids: Annotated[list[Id], Field(default_factory=list, max_length=10_000)]
    message_ids: Annotated[list[MessageId], Field(default_factory=list, max_length=10_000)]

    @model_validator(mode="after")
    def something(self) -> Self:
        if not self.memory_ids and not self.message_ids:
            raise ValueError("tick at least one memory or message: memory_ids, message_ids")
        return self


class EraseEverything(Request):
    """All of your data: every memory, conversation, queued turn and API key but the one in use."""

    everything: Literal[True]
    confirm: Literal["erase everything"] = Field(description="Typed by the person: erase everything.")


ErasureCreate = EraseMemory | EraseConversation | EraseTicked | EraseEverything


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
    lingering: str | None = Field(
        None,
        description="In the answer to an erasure, when the erased text is still in the database's "
        "files for a while, and why (SQLite: another process reading holds its write-ahead log "
        "back; it is emptied once that reader lets go). Not part of the signed body.",
    )

    @classmethod
    def of(cls, r: Receipt, lingering: str | None = None) -> ReceiptPublic:
        return cls(
            id=r.id, kind=r.kind, at=r.at.isoformat(), body=r.body, signature=r.signature, lingering=lingering
        )


class ReceiptKey(BaseModel):
    algorithm: str = "Ed25519"
    public_key: str = Field(description="Base64 of the raw 32-byte public key that signs receipts.")


class ReceiptCheck(BaseModel):
    valid: bool
    problems: list[str]
