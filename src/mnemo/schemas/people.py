"""Users, API keys, the memory switch, the review policy and the server mode."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from ..domain import (
    ApiKey,
    GateAction,
    MemoryMode,
    ReviewPolicy,
    Sensitive,
    User,
)
from ..shapes import Name
from .base import Request

if TYPE_CHECKING:
    from ..accounts import Member


class UserPublic(BaseModel):
    id: str
    name: str

    @classmethod
    def of(cls, user: User) -> UserPublic:
        return cls(id=user.id, name=user.name)


class MemberPublic(BaseModel):
    """A user as the administrator sees them: no key's secret, no fact."""

    id: str
    name: str
    created_at: datetime | None
    live_keys: int = Field(description="Keys not revoked.")
    memory_enabled: bool = Field(description="Whether memory is on for them now (server mode and switch).")
    disabled_at: datetime | None = Field(
        description="When the administrator disabled the account (null: enabled)."
    )
    queued_turns: int = Field(
        description="Turns waiting to be learnt from: queued, in hand, over budget, waiting for a model."
    )
    failed_turns: int = Field(
        description="Their turns whose learning failed for good (retry them with their key)."
    )

    @classmethod
    def of(cls, member: Member) -> MemberPublic:
        user = member.user
        return cls(
            id=user.id,
            name=user.name,
            created_at=user.created_at,
            live_keys=member.live_keys,
            memory_enabled=member.memory_on,
            disabled_at=user.disabled_at,
            queued_turns=member.queued,
            failed_turns=member.failed,
        )


class UserUpdate(Request):
    """What the administrator changes about a person (fields left out stay as they are)."""

    name: Name | None = None
    disabled: StrictBool | None = Field(
        None, description="true: every key of the account is refused (403) until it is false again."
    )


class MePublic(BaseModel):
    """Khoj's config payload for memory, plus the review policy."""

    user: UserPublic
    enable_memory: bool = Field(description="Whether memory is on for you now (server mode and switch).")
    memory_enabled: bool | None = Field(description="Your switch; null follows the server mode.")
    server_memory_mode: MemoryMode
    review_policy: ReviewPolicy
    record_recalls: bool = Field(description="Whether which assistant recalled which memory is recorded.")
    review_stale: bool = Field(
        True,  # a server from before the list answers without it: the list is on by default
        description='Whether memories unheard for long are offered on the "Still true?" list.',
    )
    sensitive_gate: dict[Sensitive, GateAction] = Field(
        description="What the sensitive-data gate does with each category it finds in what is stored."
    )


NOT_NULL = ("review_policy", "record_recalls", "review_stale", "sensitive_gate")


def _at_least_one_and_no_null_policy(schema: dict[str, Any]) -> None:
    """The schema says what the validator below checks: some field, and a policy that is not null."""
    schema["minProperties"] = 1
    for name in NOT_NULL:
        field = schema["properties"][name]
        field["anyOf"] = [s for s in field.get("anyOf", []) if s.get("type") != "null"]
        field.pop("default", None)


class MeSettingsUpdate(Request):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_at_least_one_and_no_null_policy)

    memory_enabled: StrictBool | None = Field(
        None, description="true, false, or null to follow the server mode."
    )
    review_policy: ReviewPolicy | None = None
    record_recalls: StrictBool | None = Field(
        None, description="false stops recording which assistant recalled what, and deletes it."
    )
    review_stale: StrictBool | None = Field(
        None, description='false stops offering memories unheard for long on the "Still true?" list.'
    )
    sensitive_gate: dict[Sensitive, GateAction] | None = Field(
        None,
        description="The sensitive-data gate's action (block, redact, hold, allow) for some"
        " categories (credential, card, bank_account, government_id, phone, email); the others"
        " stay as they are.",
    )

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not self.model_fields_set:
            raise ValueError(
                "give memory_enabled, review_policy, record_recalls, review_stale and/or sensitive_gate"
            )
        for name in NOT_NULL:
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class AdminSettings(BaseModel):
    memory_mode: MemoryMode | None = Field(
        description="As set (stored, else MNEMO_MEMORY_MODE); null: unset."
    )
    effective_memory_mode: MemoryMode


class AdminSettingsUpdate(Request):
    memory_mode: MemoryMode | None = Field(description="null clears it (back to MNEMO_MEMORY_MODE, else on).")


class KeyPublic(BaseModel):
    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None = Field(
        description="The start of the hour it last worked in (null: not used since mnemo began noting it)."
    )

    @classmethod
    def of(cls, key: ApiKey) -> KeyPublic:
        return cls(
            id=key.id,
            name=key.name,
            created_at=key.created_at,
            revoked_at=key.revoked_at,
            last_used_at=key.last_used_at,
        )


class KeyCreated(KeyPublic):
    token: str = Field(description="The key itself: shown this once, stored only as a hash.")

    @classmethod
    def made(cls, key: ApiKey, token: str) -> KeyCreated:
        return cls(**KeyPublic.of(key).model_dump(), token=token)


class KeyCreate(Request):
    name: Name = "api"


class UserCreate(Request):
    name: Name


class UserCreated(BaseModel):
    user: UserPublic
    key: KeyCreated
