"""Tokens the chat model spent learning, per UTC day, and daily budgets."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, StrictInt

from ..domain import MAX_TOKEN_BUDGET, DayUsage, User
from .base import Request

if TYPE_CHECKING:
    from ..accounts import Usage


class DayTokens(BaseModel):
    day: date = Field(description="A UTC day.")
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    calls: int = Field(description="Calls to the chat model.")
    unreported_calls: int = Field(
        description="Calls whose reply told no usage: their tokens are unknown, counted in no total."
    )

    @classmethod
    def of(cls, day: DayUsage) -> DayTokens:
        u = day.usage
        return cls(
            day=day.day,
            prompt_tokens=u.prompt,
            completion_tokens=u.completion,
            total_tokens=u.total,
            calls=u.calls,
            unreported_calls=u.unreported,
        )


class UsagePublic(BaseModel):
    today: DayTokens
    days: list[DayTokens] = Field(description="The last 30 UTC days, today first.")
    daily_token_budget: int | None = Field(description="The budget that applies; null: unlimited.")
    own_budget: int | None = Field(
        description="Set for this person by the administrator; null: the server's default."
    )
    left_today: int | None = Field(description="Tokens left today; null: unlimited.")
    resets_at: datetime = Field(description="The next UTC midnight, when turns over budget are learnt.")

    @classmethod
    def of(cls, usage: Usage) -> UsagePublic:
        return cls(
            today=DayTokens.of(usage.today),
            days=[DayTokens.of(d) for d in usage.days],
            daily_token_budget=usage.budget,
            own_budget=usage.own_budget,
            left_today=usage.left,
            resets_at=usage.resets_at,
        )


class MemberUsage(BaseModel):
    """One user's tokens as the administrator sees them."""

    id: str
    name: str
    today_tokens: int
    last_30_days_tokens: int
    unreported_calls: int = Field(description="In the last 30 days.")
    daily_token_budget: int | None
    own_budget: int | None
    left_today: int | None

    @classmethod
    def of(cls, user: User, usage: Usage) -> MemberUsage:
        return cls(
            id=user.id,
            name=user.name,
            today_tokens=usage.today.usage.total,
            last_30_days_tokens=usage.total.total,
            unreported_calls=usage.total.unreported,
            daily_token_budget=usage.budget,
            own_budget=usage.own_budget,
            left_today=usage.left,
        )


class BudgetUpdate(Request):
    daily_token_budget: StrictInt | None = Field(
        ge=0,
        le=MAX_TOKEN_BUDGET,
        description="Tokens a day for this person; null: back to the server's default"
        " (MNEMO_WRITE__DAILY_TOKEN_BUDGET).",
    )
