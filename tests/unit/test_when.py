"""The time a question asks about, read against a fixed now: each expression, the calendar's
edges, other languages, and what is not read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mnemo.recall.when import window

NOW = datetime(2023, 5, 20, 14, 30, tzinfo=UTC)  # a Saturday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I buy last month?", day(2023, 4, 1), day(2023, 5, 1)),
        ("Where did I travel in 2022?", day(2022, 1, 1), day(2023, 1, 1)),
        ("What did I cook yesterday?", day(2023, 5, 19), day(2023, 5, 20)),
        ("and the day before yesterday?", day(2023, 5, 18), day(2023, 5, 19)),
        ("Who did I meet two weeks ago?", day(2023, 5, 3), day(2023, 5, 10)),  # 6 May, give or take 3 days
        ("what happened 3 days ago", day(2023, 5, 17), day(2023, 5, 18)),
        ("a year ago, what was my job?", day(2021, 11, 19), day(2022, 11, 19)),  # 20 May 2022 ± 182 days
        ("Where did I go last summer?", day(2022, 6, 1), day(2022, 9, 1)),
        ("what did I read last winter", day(2022, 12, 1), day(2023, 3, 1)),  # across the new year
        ("What did I do in the spring of 2021?", day(2021, 3, 1), day(2021, 6, 1)),
        ("What did I plant in May?", day(2023, 5, 1), day(2023, 6, 1)),  # this May: it has begun
        ("What did I plant last May?", day(2022, 5, 1), day(2022, 6, 1)),
        ("in September", day(2022, 9, 1), day(2022, 10, 1)),  # the latest September
        ("in May 2022", day(2022, 5, 1), day(2022, 6, 1)),
        ("What did I do last week?", day(2023, 5, 8), day(2023, 5, 15)),  # Monday to Monday
        ("anything this week?", day(2023, 5, 15), day(2023, 5, 22)),
        ("last year", day(2022, 1, 1), day(2023, 1, 1)),
        ("What did I do last Saturday?", day(2023, 5, 13), day(2023, 5, 14)),  # today is Saturday
        ("on Friday", day(2023, 5, 19), day(2023, 5, 20)),
        ("last weekend", day(2023, 5, 13), day(2023, 5, 15)),
        ("in the past 3 days", day(2023, 5, 17) + (NOW - day(2023, 5, 20)), NOW),
        ("over the last two weeks", day(2023, 5, 6) + (NOW - day(2023, 5, 20)), NOW),
        ("in the past year", datetime(2022, 5, 20, 14, 30, tzinfo=UTC), NOW),
        ("everything since 2021", day(2021, 1, 1), NOW),
        # a day of a month, with or without its year; stretches between two months or days
        ("What did Melanie paint on October 13, 2022?", day(2022, 10, 13), day(2022, 10, 14)),
        ("on December 1,2022", day(2022, 12, 1), day(2022, 12, 2)),
        ("on 1 February, 2023", day(2023, 2, 1), day(2023, 2, 2)),
        ("when we met on Aug 15th", day(2022, 8, 15), day(2022, 8, 16)),  # the latest 15 August
        ("the March 15th issue", day(2023, 3, 15), day(2023, 3, 16)),
        ("on May 20", day(2023, 5, 20), day(2023, 5, 21)),  # today
        ("on May 21", day(2022, 5, 21), day(2022, 5, 22)),  # not yet this year
        ("2022-11-03", day(2022, 11, 3), day(2022, 11, 4)),
        ("between August 11 and August 15 2022", day(2022, 8, 11), day(2022, 8, 16)),
        ("between August 11 and 15", day(2022, 8, 11), day(2022, 8, 16)),
        ("from July to October", day(2022, 7, 1), day(2022, 11, 1)),
        ("from November to February 2023", day(2022, 11, 1), day(2023, 3, 1)),  # across the new year
        ("am 13. Oktober 2022", day(2022, 10, 13), day(2022, 10, 14)),
        ("le 1er mars", day(2023, 3, 1), day(2023, 3, 2)),
        ("el 13 de octubre de 2022", day(2022, 10, 13), day(2022, 10, 14)),
        ("em 13 de outubro de 2022", day(2022, 10, 13), day(2022, 10, 14)),
        ("il 13 ottobre 2022", day(2022, 10, 13), day(2022, 10, 14)),
        # the other languages' common forms
        ("Was habe ich letzten Monat gekauft?", day(2023, 4, 1), day(2023, 5, 1)),
        ("Was war vor 2 Tagen?", day(2023, 5, 18), day(2023, 5, 19)),
        ("Wo war ich im Mai?", day(2023, 5, 1), day(2023, 6, 1)),
        ("gestern", day(2023, 5, 19), day(2023, 5, 20)),
        ("Qu'ai-je lu la semaine dernière ?", day(2023, 5, 8), day(2023, 5, 15)),
        ("il y a trois jours", day(2023, 5, 17), day(2023, 5, 18)),
        ("l'été dernier", day(2022, 6, 1), day(2022, 9, 1)),
        ("¿Qué hice el año pasado?", day(2022, 1, 1), day(2023, 1, 1)),
        ("hace dos semanas", day(2023, 5, 3), day(2023, 5, 10)),
        ("en 2021", day(2021, 1, 1), day(2022, 1, 1)),
        ("O que fiz ontem?", day(2023, 5, 19), day(2023, 5, 20)),
        ("no mês passado", day(2023, 4, 1), day(2023, 5, 1)),
        ("Cosa ho fatto l'anno scorso?", day(2022, 1, 1), day(2023, 1, 1)),
        ("2 giorni fa", day(2023, 5, 18), day(2023, 5, 19)),
        ("nel 2020", day(2020, 1, 1), day(2021, 1, 1)),
    ],
)
def test_an_expression_names_its_span(query, start, end):
    found = window(query, NOW)
    assert found is not None, query
    assert (found.start, found.end) == (start, end)
    assert found.phrase in " ".join(query.lower().split())


@pytest.mark.parametrize(
    ("now", "query", "start", "end"),
    [
        (day(2023, 1, 15), "last month", day(2022, 12, 1), day(2023, 1, 1)),
        (day(2023, 1, 2), "last week", day(2022, 12, 26), day(2023, 1, 2)),  # Monday 2 January
        (day(2024, 1, 1), "yesterday", day(2023, 12, 31), day(2024, 1, 1)),
        (day(2023, 3, 1), "in May", day(2022, 5, 1), day(2022, 6, 1)),  # May has not begun yet
        (day(2023, 1, 20), "last winter", day(2021, 12, 1), day(2022, 3, 1)),  # this winter is under way
        (day(2023, 1, 20), "this winter", day(2022, 12, 1), day(2023, 3, 1)),
        # leap days
        (day(2024, 3, 1), "yesterday", day(2024, 2, 29), day(2024, 3, 1)),
        (day(2024, 2, 29), "in the past year", day(2023, 2, 28), day(2024, 2, 29)),
        (day(2024, 3, 31), "in the past month", day(2024, 2, 29), day(2024, 3, 31)),
        (day(2023, 3, 31), "a month ago", day(2023, 2, 13), day(2023, 3, 16)),  # 28 February ± 15 days
        (day(2024, 2, 29), "in February", day(2024, 2, 1), day(2024, 3, 1)),
        (day(2023, 5, 1), "on February 29", day(2020, 2, 29), day(2020, 3, 1)),  # the latest leap day
        (day(2024, 3, 1), "on February 29", day(2024, 2, 29), day(2024, 3, 1)),
        (day(2023, 12, 31), "on December 31", day(2023, 12, 31), day(2024, 1, 1)),
    ],
)
def test_the_calendars_edges(now, query, start, end):
    found = window(query, now)
    assert found is not None and (found.start, found.end) == (start, end)


@pytest.mark.parametrize(
    ("query", "phrase"),
    [
        ("I went running in March 3 times", "in march"),  # a count, not a day
        ("between August 15 and August 11", "august 15"),  # a stretch ending before it starts
        ("in May 2022 or on February 30, 2022", "in may 2022"),  # no such day
    ],
)
def test_a_day_is_read_only_where_it_is_one(query, phrase):
    found = window(query, NOW)
    assert found is not None and found.phrase == phrase


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "Where do I live?",
        "When did I move to Porto?",  # asks for a time; names none
        "What did I do before I moved?",  # needs what the move was: not read
        "How many days ago did I go to the concert?",
        "May I ask what my sister's name is?",  # "may" the verb
        "I fall asleep late",  # "fall" the verb
        "I have a 2022 Honda",  # a year that is not a time asked about
        "What is my favourite summer dish?",  # a bare season
        "Was machst du hier?",  # German "hier" is "here"
        "in 0999",  # before the year 1000
        "in 999",
        "in 9999",  # its end is past the calendar
        "3000 years ago",
        "999999 years ago",
        "999999 days ago",
        "in 12345",
        "the last time I went swimming",
        "on 9999-12-31",  # its end is past the calendar
        "on 31 December 9999",
        "on 0999-01-01",
        "on 2023-02-30",
        "May 5 people come?",
        "between May 40 and May 41",
    ],
)
def test_what_is_not_read_gives_no_window(query):
    assert window(query, NOW) is None


def test_the_first_expression_wins_and_an_unreadable_one_is_passed_over():
    found = window("in 2021, or was it last month?", NOW)
    assert found is not None and found.start == day(2021, 1, 1)
    found = window("in 0999, or was it last month?", NOW)
    assert found is not None and found.start == day(2023, 4, 1)


def test_a_huge_query_is_read_without_error():
    query = "what did I do " * 20_000 + "last month"
    found = window(query, NOW)
    assert found is not None and found.start == day(2023, 4, 1)


def test_now_at_the_end_of_the_calendar():
    end = datetime(9999, 12, 31, 12, tzinfo=UTC)
    assert window("this year", end) is None  # its end would be the year 10000
    found = window("yesterday", end)
    assert found is not None and found.start == day(9999, 12, 30)


def test_now_in_another_zone_is_read_in_utc():
    """23:30 on 31 December at -05:00 is already 1 January in UTC."""
    found = window("yesterday", datetime(2023, 12, 31, 23, 30, tzinfo=timezone(-timedelta(hours=5))))
    assert found is not None and found.start == day(2023, 12, 31)
