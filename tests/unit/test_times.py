"""domain.py's times: every time held in UTC, within the years 1 to 9999 (EARLIEST to LATEST)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mnemo.domain import (
    EARLIEST,
    LATEST,
    Fact,
    InvalidInput,
    Scope,
    Status,
    TimeOutOfRange,
    as_utc,
    parse_time,
    shift,
)
from mnemo.write import changes
from tests.unit.helpers import NOW, fact

PLUS_14 = timezone(timedelta(hours=14))
MINUS_5 = timezone(-timedelta(hours=5))


def test_the_stored_range_is_pythons_whole_calendar_in_utc():
    assert EARLIEST == datetime(1, 1, 1, tzinfo=UTC) == datetime.min.replace(tzinfo=UTC)
    assert (
        LATEST == datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) == datetime.max.replace(tzinfo=UTC)
    )


def test_as_utc_reads_a_naive_time_as_utc():
    converted = as_utc(datetime(2026, 3, 1, 12, 30))
    assert converted == datetime(2026, 3, 1, 12, 30, tzinfo=UTC) and converted.tzinfo is UTC


def test_as_utc_gives_a_utc_time_back_as_it_is():
    assert as_utc(NOW) is NOW


@pytest.mark.parametrize(
    ("given", "utc"),
    [
        (datetime(2026, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))), datetime(2026, 3, 1, 12, 0)),
        (datetime(1000, 1, 1, tzinfo=PLUS_14), datetime(999, 12, 31, 10, 0)),
        (datetime(1, 1, 1, 14, 0, tzinfo=PLUS_14), datetime(1, 1, 1, 0, 0)),
        (datetime(9999, 12, 31, 18, 59, tzinfo=MINUS_5), datetime(9999, 12, 31, 23, 59)),
        (datetime(2026, 3, 1, 12, 0, tzinfo=timezone(timedelta(0), "Z")), datetime(2026, 3, 1, 12, 0)),
    ],
)
def test_as_utc_moves_an_aware_time_to_the_same_instant_in_utc(given, utc):
    converted = as_utc(given)
    assert converted == given and converted.tzinfo is UTC
    assert converted.replace(tzinfo=None) == utc


@pytest.mark.parametrize(
    "given",
    [
        datetime(1, 1, 1, tzinfo=PLUS_14),  # the year 0 in UTC
        datetime(1, 1, 1, 13, 59, tzinfo=PLUS_14),
        datetime(9999, 12, 31, 23, 0, tzinfo=MINUS_5),  # the year 10000 in UTC
    ],
)
def test_as_utc_refuses_an_instant_outside_the_years_1_to_9999(given):
    with pytest.raises(TimeOutOfRange, match=r"is outside the years 1 to 9999 once in UTC$") as refused:
        as_utc(given)
    assert str(refused.value).startswith(given.isoformat())
    assert isinstance(refused.value, InvalidInput) and isinstance(refused.value, ValueError)


@pytest.mark.parametrize(
    ("at", "delta", "shifted"),
    [
        (NOW, timedelta(days=1), datetime(2026, 3, 2, 12, 0, tzinfo=UTC)),
        (NOW, -timedelta(days=365), datetime(2025, 3, 1, 12, 0, tzinfo=UTC)),
        (EARLIEST + timedelta(days=1), -timedelta(days=5), EARLIEST),
        (LATEST - timedelta(days=1), timedelta(days=10), LATEST),
        (NOW, timedelta.max, LATEST),
        (NOW, timedelta.min, EARLIEST),
        (LATEST, timedelta(0), LATEST),
        (
            datetime(9999, 12, 31, tzinfo=UTC),
            timedelta(hours=23, minutes=59, seconds=59, microseconds=999999),
            LATEST,
        ),
        # an instant before the year 1 in UTC, though written in the year 1, is held at EARLIEST
        (datetime(1, 1, 1, 5, 0, tzinfo=PLUS_14), timedelta(0), EARLIEST),
    ],
)
def test_shift_never_overflows_and_stays_in_the_stored_range(at, delta, shifted):
    assert shift(at, delta) == shifted


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (None, None),
        ("", None),
        ("2026-03-01T12:00:00", datetime(2026, 3, 1, 12, 0, tzinfo=UTC)),
        ("0874-06-01", datetime(874, 6, 1, tzinfo=UTC)),
        ("2026-03-01T14:00:00+02:00", datetime(2026, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))),
    ],
)
def test_parse_time_reads_iso_text_and_takes_a_naive_time_as_utc(text, parsed):
    got = parse_time(text)
    assert got == parsed and (got is None or got.tzinfo == parsed.tzinfo)


def test_parse_time_gives_a_datetime_back():
    assert parse_time(NOW) is NOW


def test_a_fact_holds_every_time_in_utc_whichever_way_it_was_made():
    made = fact(
        valid_from=datetime(1000, 1, 1, tzinfo=PLUS_14),
        valid_to=datetime(2030, 1, 1, 7, 0, tzinfo=MINUS_5),
        retired_at=datetime(2026, 3, 2, 9, 0),  # naive: UTC
        last_seen_at=None,
    )
    assert made.valid_from == datetime(999, 12, 31, 10, 0, tzinfo=UTC) and made.valid_from.tzinfo is UTC
    assert made.valid_to == datetime(2030, 1, 1, 12, 0, tzinfo=UTC) and made.valid_to.tzinfo is UTC
    assert made.retired_at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC) and made.retired_at.tzinfo is UTC
    assert made.last_seen_at is None and made.recorded_at == NOW


def test_a_fact_from_a_snapshot_is_in_utc_and_equal_to_the_fact_it_recorded():
    made = fact(valid_from=datetime(874, 6, 1, tzinfo=UTC), valid_to=datetime(2030, 1, 1, tzinfo=PLUS_14))
    assert Fact.from_snapshot("u", made.snapshot()) == made
    snapshot = {**made.snapshot(), "created_at": "2026-03-01T14:00:00+02:00", "recorded_at": "0874-06-01"}
    read = Fact.from_snapshot("u", snapshot)
    assert (read.created_at, read.recorded_at) == (NOW, datetime(874, 6, 1, tzinfo=UTC))
    assert read.created_at.tzinfo is UTC


def test_a_fact_cannot_hold_a_time_outside_the_calendar():
    with pytest.raises(TimeOutOfRange):
        fact(valid_from=datetime(1, 1, 1, tzinfo=PLUS_14))
    with pytest.raises(TimeOutOfRange):
        fact().evolve(valid_to=datetime(9999, 12, 31, 23, 0, tzinfo=MINUS_5))


def test_a_fact_is_valid_from_its_start_up_to_but_not_at_its_end():
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
    bounded = fact(valid_from=start, valid_to=end)
    assert [bounded.is_valid_at(start - timedelta(microseconds=1)), bounded.is_valid_at(start)] == [
        False,
        True,
    ]
    assert [bounded.is_valid_at(end - timedelta(microseconds=1)), bounded.is_valid_at(end)] == [True, False]
    assert fact().is_valid_at(EARLIEST) and fact().is_valid_at(LATEST)


def test_a_new_fact_holds_its_times_in_utc():
    made = changes.new_fact(
        Scope("u"),
        "I was born at the edge of a date line",
        now=datetime(2026, 3, 1, 12, 0, tzinfo=PLUS_14),
        source=changes.Source(),
        valid_from=datetime(1000, 1, 1, tzinfo=PLUS_14),
    )
    assert made.created_at.tzinfo is UTC and made.valid_from == datetime(999, 12, 31, 10, 0, tzinfo=UTC)
    assert made.status == Status.ACTIVE
