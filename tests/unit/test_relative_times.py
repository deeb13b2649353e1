"""The page's relative times: "3 days ago", from the smallest to the largest span."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mnemo.domain import EARLIEST, LATEST
from mnemo.web.render import ago

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (timedelta(0), "just now"),
        (timedelta(seconds=59), "just now"),
        (timedelta(seconds=60), "1 minute ago"),
        (timedelta(minutes=59, seconds=59), "59 minutes ago"),
        (timedelta(hours=1), "1 hour ago"),
        (timedelta(hours=23, minutes=59), "23 hours ago"),
        (timedelta(days=1), "1 day ago"),
        (timedelta(days=3, hours=5), "3 days ago"),
        (timedelta(days=27), "27 days ago"),  # 11 February: not yet a month before 10 March
        (timedelta(days=28), "1 month ago"),  # 10 February
        (timedelta(days=364), "11 months ago"),
        (timedelta(days=365), "1 year ago"),  # 10 March 2025
        (timedelta(days=3653), "10 years ago"),
        (-timedelta(seconds=30), "just now"),
        (-timedelta(days=2), "in 2 days"),
        (-timedelta(hours=1), "in 1 hour"),
    ],
)
def test_a_span_is_said_in_its_largest_whole_unit(before, said):
    assert ago(NOW - before, NOW) == said


def test_the_extremes_of_time_and_other_zones():
    assert ago(EARLIEST, LATEST) == "9998 years ago"  # 1 January 1 to 31 December 9999, rounded down
    assert ago(LATEST, EARLIEST) == "in 9998 years"
    end_of_month = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)
    assert ago(end_of_month, datetime(2026, 2, 28, 12, 0, tzinfo=UTC)) == "28 days ago"
    assert ago(end_of_month, datetime(2026, 3, 1, 12, 0, tzinfo=UTC)) == "1 month ago"
    lisbon_noon = datetime(2026, 3, 10, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    assert ago(lisbon_noon, NOW) == "just now"  # the same instant, written in another zone
