"""Token counts and UTC days: the rules the budgets stand on."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from mnemo.domain import TokenUsage, next_utc_midnight, tokens_left, utc_day
from mnemo.providers.base import metered, spent


@pytest.mark.parametrize(
    ("at", "day", "midnight"),
    [
        (datetime(2026, 3, 1, 12, tzinfo=UTC), date(2026, 3, 1), datetime(2026, 3, 2, tzinfo=UTC)),
        (datetime(2026, 3, 1, tzinfo=UTC), date(2026, 3, 1), datetime(2026, 3, 2, tzinfo=UTC)),  # at midnight
        (datetime(2026, 2, 28, 23, 59, 59, tzinfo=UTC), date(2026, 2, 28), datetime(2026, 3, 1, tzinfo=UTC)),
        (
            datetime(2028, 2, 28, 23, 0, tzinfo=UTC),
            date(2028, 2, 28),
            datetime(2028, 2, 29, tzinfo=UTC),
        ),  # leap
        (datetime(2026, 12, 31, 23, 0, tzinfo=UTC), date(2026, 12, 31), datetime(2027, 1, 1, tzinfo=UTC)),
        # 23:30 at UTC-5 is 04:30 the next UTC day
        (
            datetime(2026, 3, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5))),
            date(2026, 3, 2),
            datetime(2026, 3, 3, tzinfo=UTC),
        ),
        # 00:30 at UTC+14 is still the day before in UTC
        (
            datetime(2026, 3, 2, 0, 30, tzinfo=timezone(timedelta(hours=14))),
            date(2026, 3, 1),
            datetime(2026, 3, 2, tzinfo=UTC),
        ),
    ],
)
def test_a_day_is_a_utc_day_and_the_next_one_starts_at_utc_midnight(at, day, midnight):
    assert utc_day(at) == day
    assert next_utc_midnight(at) == midnight and next_utc_midnight(at).tzinfo is UTC


def test_usage_adds_up_and_unreported_calls_count_no_tokens():
    total = TokenUsage(10, 5, calls=1) + TokenUsage(calls=1, unreported=1) + TokenUsage(1, 0, calls=1)
    assert total == TokenUsage(11, 5, calls=3, unreported=1) and total.total == 16
    assert total.summary() == {"prompt": 11, "completion": 5, "total": 16, "calls": 3, "unreported_calls": 1}


@pytest.mark.parametrize(
    ("budget", "used", "left"),
    [(None, 10**15, None), (0, 0, 0), (100, 40, 60), (100, 100, 0), (100, 250, 0)],
)
def test_what_is_left_of_a_budget_is_never_negative(budget, used, left):
    assert tokens_left(budget, TokenUsage(used, 0, calls=1)) == left


def test_a_meter_counts_the_replies_inside_it_only():
    spent(100, 100)  # no meter open: counted nowhere
    with metered() as outer:
        spent(3, 2)
        with metered() as inner:
            spent(None, 4)  # a reply without a whole usage: unknown
        spent(-5, 1)  # a server's nonsense is no credit
    assert inner.usage == TokenUsage(calls=1, unreported=1)
    assert outer.usage == TokenUsage(3, 3, calls=2)
