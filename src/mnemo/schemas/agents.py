"""Agents: a user's assistants and what they may read."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, Field, StrictBool, StringConstraints, model_validator

from ..domain import (
    Agent,
)
from ..shapes import LongText, Name, NoNul
from .base import Request


class AgentPublic(BaseModel):
    id: str
    name: str
    private: bool
    reads_default: bool
    persona: str | None
    upstream_model: str | None

    @classmethod
    def of(cls, a: Agent) -> AgentPublic:
        return cls(
            id=a.id,
            name=a.name,
            private=a.private,
            reads_default=a.reads_default,
            persona=a.persona,
            upstream_model=a.upstream_model,
        )


class AgentCreate(Request):
    name: Name
    persona: LongText | None = None
    upstream_model: Annotated[str, StringConstraints(max_length=200), *NoNul] | None = None
    private: StrictBool = False
    reads_default: StrictBool = False


class AgentUpdate(Request):
    name: Name | None = None
    persona: LongText | None = None
    upstream_model: Annotated[str, StringConstraints(max_length=200), *NoNul] | None = None
    private: StrictBool | None = None
    reads_default: StrictBool | None = None

    @model_validator(mode="after")
    def _valid(self) -> Self:
        if not self.model_fields_set:
            raise ValueError("give at least one field to change")
        for field in ("name", "private", "reads_default"):
            if field in self.model_fields_set and getattr(self, field) is None:
                raise ValueError(f"{field} cannot be null")
        return self

    def changes(self) -> dict[str, Any]:
        """The fields given; an explicit null clears persona or upstream_model."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class AgentDeleted(BaseModel):
    agent: AgentPublic
    retracted: int = Field(
        description="How many of its memories were retracted, or rejected if held for review (none erased)."
    )
