"""The end a statement gives, read against when it was said (a Wednesday, 2026-03-04)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.write.ends import end_of

SAID = datetime(2026, 3, 4, 15, 30, tzinfo=UTC)  # a Wednesday


def day_after(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("I'm in Lisbon this week", "2026-03-09"),  # holds to Sunday the 8th
        ("Ich bin diese Woche in Lissabon", "2026-03-09"),
        ("Je suis à Lisbonne cette semaine", "2026-03-09"),
        ("this weekend I'm at my parents'", "2026-03-09"),
        ("I'm off coffee this month", "2026-04-01"),
        ("I work from home today", "2026-03-05"),
        ("my sister stays with us until Friday", "2026-03-07"),
        ("my sister stays with us until Wednesday", "2026-03-12"),  # the next one, not today
        ("meine Schwester bleibt bis Freitag", "2026-03-07"),
        ("ma sœur reste jusqu'à vendredi", "2026-03-07"),
        ("mi hermana se queda hasta el viernes", "2026-03-07"),
        ("minha irmã fica até sexta", "2026-03-07"),
        ("mia sorella resta fino a venerdì", "2026-03-07"),
        ("I'm in Berlin until tomorrow", "2026-03-06"),
        ("the office is closed until March 20", "2026-03-21"),
        ("the office is closed until the 2nd of March", "2027-03-03"),  # past this year: next year's
        ("the office is closed bis 20. März", "2026-03-21"),
        ("the lease runs until 2026-06-30", "2026-07-01"),
        ("I'm training for the next two months", "2026-05-04"),
        ("ich trainiere für die nächsten 3 Wochen", "2026-03-25"),
        ("je m'entraîne pendant les deux prochaines semaines", "2026-03-18"),
        ("entreno durante los próximos 10 días", "2026-03-14"),
        ("I'll be away for 2 more weeks", "2026-03-18"),
        ("for the next year I live abroad", "2027-03-04"),
    ],
)
def test_an_end_in_the_words_is_read_against_when_it_was_said(text, ends):
    assert end_of(text, SAID) == day_after(ends)


@pytest.mark.parametrize(
    "text",
    [
        "I live in Lisbon",
        "I have been vegan for two years",  # a duration so far, not an end
        "I ran a marathon on Sunday",
        "I lived there until 2019-01-01",  # an end already past when said: not this reader's
        "until further notice I work remotely",
        "until 9999-12-31 at least",
    ],
)
def test_words_that_give_no_end_give_none(text):
    assert end_of(text, SAID) is None
