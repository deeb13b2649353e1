"""The chat model's tokens spent on learning, per user per UTC day, and each user's own daily
budget (none: the server's default). A day is stored as its ISO date, so that days sort as text
on both stores."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from ...domain import DayUsage, TokenUsage
from .tx import Tx


def _day(row: Sequence[Any]) -> DayUsage:
    return DayUsage(date.fromisoformat(str(row[0])), TokenUsage(*(int(v) for v in row[1:5])))


async def add(tx: Tx, user_id: str, day: date, usage: TokenUsage) -> None:
    """Count `usage` into the user's `day`."""
    await tx.execute(
        "INSERT INTO token_usage (user_id, day, prompt_tokens, completion_tokens, calls, unreported_calls)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, day) DO UPDATE SET"
        " prompt_tokens = token_usage.prompt_tokens + excluded.prompt_tokens,"
        " completion_tokens = token_usage.completion_tokens + excluded.completion_tokens,"
        " calls = token_usage.calls + excluded.calls,"
        " unreported_calls = token_usage.unreported_calls + excluded.unreported_calls",
        (user_id, day.isoformat(), usage.prompt, usage.completion, usage.calls, usage.unreported),
    )


async def days(tx: Tx, user_id: str, since: date) -> list[DayUsage]:
    """The user's days from `since` on that have any usage, newest first."""
    rows = await tx.all(
        "SELECT day, prompt_tokens, completion_tokens, calls, unreported_calls FROM token_usage"
        " WHERE user_id = ? AND day >= ? ORDER BY day DESC",
        (user_id, since.isoformat()),
    )
    return [_day(r) for r in rows]


async def budget(tx: Tx, user_id: str) -> int | None:
    """The user's own daily budget; None when the server's default applies."""
    row = await tx.one("SELECT daily_tokens FROM token_budgets WHERE user_id = ?", (user_id,))
    return None if row is None else int(row[0])


async def set_budget(tx: Tx, user_id: str, tokens: int | None, now: datetime) -> None:
    """Set the user's own daily budget (None: back to the server's default). The user's turns
    waiting over budget are due again `now`, to be learnt or deferred by the new budget."""
    if tokens is None:
        await tx.execute("DELETE FROM token_budgets WHERE user_id = ?", (user_id,))
    else:
        await tx.execute(
            "INSERT INTO token_budgets (user_id, daily_tokens) VALUES (?, ?)"
            " ON CONFLICT (user_id) DO UPDATE SET daily_tokens = excluded.daily_tokens",
            (user_id, tokens),
        )
    await tx.execute(
        "UPDATE jobs SET next_attempt_at = ? WHERE user_id = ? AND status = 'over_budget'", (now, user_id)
    )
