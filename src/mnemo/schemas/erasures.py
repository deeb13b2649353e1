"""Erasures: what one would take, the request to carry one out, and its signed receipt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from ..domain import Receipt
from ..shapes import ConversationId, Id, NoNul
from .base import Request
from .facts import FactPublic

if TYPE_CHECKING:
    from ..erasure import Plan, Said

MessageId = Annotated[str, StringConstraints(min_length=1, max_length=200), *NoNul]


class MessageShown(BaseModel):
    """A message as a preview shows it: where it is, and what it says."""

    conversation_id: str
    message_id: str
    role: str = Field(description="Who said it: user, assistant, system or tool.")
    at: str = Field(description="When it was said (ISO 8601).")
    characters: int = Field(description="How long its text is.")
    excerpt: str = Field(
        description="Its text, or, for a long message, the part around where it says the erased text."
    )
    why: str = Field(description='"learnt from" (a memory\'s source), "says it" or "ticked".')

    @classmethod
    def of(cls, m: Said) -> MessageShown:
        return cls(
            conversation_id=m.conversation_id,
            message_id=m.message_id,
            role=m.role,
            at=m.at.isoformat(),
            characters=m.characters,
            excerpt=m.excerpt,
            why=m.why,
        )


class ErasurePlanPublic(BaseModel):
    kind: str = Field(description="memory, conversation, selection or everything.")
    memories: list[FactPublic] = Field(description="The memories whose text is erased.")
    messages: list[MessageShown] = Field(description="The messages whose text is erased (a marker stays).")
    conversations: list[str] = Field(description="The conversations removed whole.")
    keys: bool = Field(
        description="Everything: every API key goes too, but the one in use (its name overwritten), and"
        " every agent (deleted, its name overwritten, its persona erased)."
    )
    kept_memories: list[FactPublic] = Field(
        description="Memories that stay, though learnt from an erased message or conversation: they "
        "lose the words they came from."
    )
    offered_messages: list[MessageShown] = Field(
        description="Messages that say an erased text but are much longer than it (or that you "
        "left out with `keep_message_ids`): they stay unless named in `message_ids`."
    )
    other_agents: list[FactPublic] = Field(
        description="The same text, active or waiting for review in another of your agents' "
        "memories: it stays, and is still recalled there, unless `with_other_agents` is true."
    )

    @classmethod
    def of(cls, plan: Plan) -> ErasurePlanPublic:
        return cls(
            kind=plan.kind,
            memories=[FactPublic.of(f) for f in plan.facts],
            messages=[MessageShown.of(m) for m in plan.said],
            conversations=list(plan.conversations),
            keys=plan.keys,
            kept_memories=[FactPublic.of(f) for f in plan.cited_by],
            offered_messages=[MessageShown.of(m) for m in plan.offered],
            other_agents=[FactPublic.of(f) for f in plan.elsewhere],
        )


MessageIds = Annotated[list[MessageId], Field(default_factory=list, max_length=10_000)]
KeepMessages = Annotated[
    list[MessageId],
    Field(
        default_factory=list,
        max_length=10_000,
        description="Messages the erasure would take that stay (see the preview's `messages`).",
    ),
]
WithOtherAgents = Annotated[
    StrictBool,
    Field(
        description="The same text in your other agents' memories goes too (the preview's `other_agents`)."
    ),
]


class EraseMemory(Request):
    """One memory, with the messages it was learnt from and those that say it and are not much
    longer; `message_ids`: messages to erase too (the preview's `offered_messages`)."""

    memory_id: Id
    message_ids: MessageIds
    keep_message_ids: KeepMessages
    with_other_agents: WithOtherAgents = False


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
    message_ids: MessageIds
    keep_message_ids: KeepMessages
    with_other_agents: WithOtherAgents = False

    @model_validator(mode="after")
    def something(self) -> Self:
        if not self.memory_ids and not self.message_ids:
            raise ValueError("tick at least one memory or message: memory_ids, message_ids")
        return self


class EraseEverything(Request):
    """All of your data: every memory (and where it came from), conversation, queued turn, agent
    and API key but the one in use."""

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
