"""The time a question asks about: "last month", "in 2022", "two weeks ago", read against `now`.

`window(query, now)` finds the first time expression it can read honestly and
gives the span of time it names, in UTC: a calendar day ("yesterday",
"on October 13, 2023", "le 1er mars"; a date without a year is the latest one
not after today), week (Monday to Sunday), month, season (northern: spring is
March to May) or year; a stretch from one month or day to another ("from July
to October", "between August 11 and 15"); the stretch "in the past N days" up
to `now`; or, for "N weeks, months or years ago", the days within half that
unit of the day it names. What it cannot pin down ("recently",
"before I moved", "when did I…") gives None, and the question is recalled as
any other.

English, German, French, Spanish, Portuguese and Italian, in their most common
forms. French "hier" (yesterday) is left out: in German it means "here". A
bare month needs a word before it ("in May", "im Mai", "last May") or a year
after it ("May 2022"): "may" is also a verb; a day of a month is not read where a count of
something follows it ("in March 3 times"). A span that would start before
the year 1000 or end after 9999 is no window.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..time_words import MONTHS, NUMBERS, SEASONS, UNITS, WEEKDAYS

MIN_YEAR = 1000


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime  # inclusive, UTC
    end: datetime  # exclusive, UTC
    phrase: str  # the words it was read from


def _alt(words: dict[str, int]) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))


_N = rf"(?P<n>\d{{1,6}}|{_alt(NUMBERS)})"
_UNIT = rf"(?P<unit>{_alt(UNITS)})"
_LAST = r"(?:last|past|previous|letzte[nmrs]?|vergangene[nmrs]?|vorige[nmrs]?)"
_AFTER_LAST = r"(?:dernière|derniere|dernier|pasada|pasado|passada|passado|scorsa|scorso)"
_THIS = r"(?:this|diese[nmrs]?)"
_IN = r"(?:in the|in|during|im|en|em|nel|durante)"
_ARTICLE = r"(?:(?:la|le|el|o|a|il) |l'|l’)"

Reader = Callable[[re.Match[str], datetime], tuple[datetime, datetime]]


def _day(at: datetime) -> datetime:
    return datetime(at.year, at.month, at.day, tzinfo=UTC)


def _span(year: int, month: int, months: int) -> tuple[datetime, datetime]:
    """`months` calendar months from the first of `month` of `year`."""
    end = year * 12 + month - 1 + months
    return datetime(year, month, 1, tzinfo=UTC), datetime(end // 12, end % 12 + 1, 1, tzinfo=UTC)


def _unit_around(unit: int, at: datetime) -> tuple[datetime, datetime]:
    """The calendar day, week (from Monday), month or year that holds `at`."""
    if unit == 1:
        return _day(at), _day(at) + timedelta(days=1)
    if unit == 7:
        monday = _day(at) - timedelta(days=at.weekday())
        return monday, monday + timedelta(days=7)
    return _span(at.year, at.month if unit == 30 else 1, 1 if unit == 30 else 12)


def _back(unit: int, n: int, now: datetime) -> datetime:
    """`n` days, weeks, months or years before `now`; a month back from 31 March is the
    last day of February, a year back from 29 February 2024 is 28 February 2023."""
    if unit in (1, 7):
        return now - timedelta(days=unit * n)
    index = now.year * 12 + now.month - 1 - n * (12 if unit == 365 else 1)
    year, month = index // 12, index % 12 + 1
    return now.replace(year=year, month=month, day=min(now.day, monthrange(year, month)[1]))


def _unit(m: re.Match[str]) -> int:
    return UNITS[m.group("unit").lower()]


def _count(m: re.Match[str]) -> int:
    n = m.groupdict().get("n")
    return 1 if n is None else int(n) if n.isdigit() else NUMBERS[n]


def _ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """The day of "3 days ago"; for "two weeks ago", "a month ago", "a year ago", the days
    within half a week, month or year of the day that long back (people round them)."""
    unit = _unit(m)
    point = _day(_back(unit, _count(m), now))
    half = timedelta(days=unit // 2)
    return point - half, point + half + timedelta(days=1)


def _within(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "in the past 3 weeks": from that long ago up to now."""
    return _back(_unit(m), _count(m), now), now


def _last_unit(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "last week": the calendar week before this one."""
    return _unit_around(_unit(m), _back(_unit(m), 1, now))


def _this_unit(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _unit_around(_unit(m), now)


def _yesterday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    before = m.group(0).startswith(("day before", "vor", "avant", "ante", "l'altro"))
    return _unit_around(1, now - timedelta(days=2 if before else 1))


def _year_named(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _span(int(m.group("year")), 1, 12)


def _since_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _span(int(m.group("year")), 1, 12)[0], now


def _named(m: re.Match[str], now: datetime, first: int, months: int) -> tuple[datetime, datetime]:
    """A month or season (`months` long from month `first`) with its year, or the latest one
    that has begun; "last May" in May, "last summer" in summer: the one before. A bare name
    ("may", "fall") is no time."""
    last, after, year = m.group("last"), m.group("after"), m.group("year")
    if year:
        return _span(int(year), first, months)
    if not (last or after):
        raise ValueError("a bare name")
    start, end = _span(now.year if now.month >= first else now.year - 1, first, months)
    if (after or re.match(_LAST, last)) and start <= now < end:
        start, end = _span(start.year - 1, first, months)
    return start, end


def _date(m: re.Match[str], now: datetime, suffix: str = "") -> datetime:
    """The day a match names (its groups `month`, `day`, `year`, each ending in `suffix`): with
    no year, the latest such day not after today. An impossible day raises ValueError."""
    month, day = MONTHS[m.group("month" + suffix).lower()], int(m.group("day" + suffix))
    year = m.group("year")
    if year:
        return datetime(int(year), month, day, tzinfo=UTC)
    year_back = now.year
    while True:  # this year's, or the latest before it (29 February: the latest leap year's)
        if day <= monthrange(year_back, month)[1]:
            named = datetime(year_back, month, day, tzinfo=UTC)
            if named <= _day(now):
                return named
        if year_back < now.year - 8:
            raise ValueError("no such day")
        year_back -= 1


def _on_day(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    start = _date(m, now)
    return start, start + timedelta(days=1)


def _iso_day(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    start = datetime(int(m.group("year")), int(m.group("m")), int(m.group("day")), tzinfo=UTC)
    return start, start + timedelta(days=1)


def _days_between(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "between August 11 and (August) 15": both days and those between; the second day takes
    the first's month when it names none."""
    start = _date(m, now)
    month = m.group("month2") or m.group("month")
    end = start.replace(month=MONTHS[month.lower()], day=int(m.group("day2")))
    if end < start:
        raise ValueError("a stretch that ends before it starts")
    return start, end + timedelta(days=1)


def _months_between(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "from July to October": the first of one to the end of the other, the latest such
    stretch that has begun (or in the year named); one across the new year ends in the next."""
    first, last = MONTHS[m.group("month").lower()], MONTHS[m.group("month2").lower()]
    length = (last - first) % 12 + 1
    year = m.group("year")
    if year:
        return _span(int(year) - (last < first), first, length)
    return _span(now.year if now.month >= first else now.year - 1, first, length)


def _month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _named(m, now, MONTHS[m.group("month").lower()], 1)


def _season(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _named(m, now, SEASONS[m.group("season").lower()], 3)


def _weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """The latest such day before today."""
    back = (now.weekday() - WEEKDAYS[m.group("weekday").lower()] - 1) % 7 + 1
    return _unit_around(1, now - timedelta(days=back))


def _weekend(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """The latest Saturday and Sunday both before today."""
    saturday = _day(now) - timedelta(days=(now.weekday() - 5) % 7)
    if saturday + timedelta(days=2) > _day(now):
        saturday -= timedelta(days=7)
    return saturday, saturday + timedelta(days=2)


_B = r"(?<![\w'’-])"  # a word starts here
_E = r"(?![\w'’-])"  # and ends here
_LAST_OR_IN = rf"(?:(?P<last>{_LAST}|{_THIS}|{_IN}) )?{_ARTICLE}?"
_MONTH = rf"(?P<month>{_alt(MONTHS)})"
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th|er|º|\.)?"
_YEAR = r"(?:,? ?(?:de |del )?(?P<year>\d{4}))"
# what a number after a month may count instead of naming a day ("in March 3 times")
_COUNTED = (
    r"(?! (?:times|people|persons|hours|minutes|days|weeks|months|years|km|miles|mal|fois|veces|vezes"
    r"|volte)(?![\w'’-]))"
)
_ORDERED: list[tuple[str, Reader]] = [
    (
        rf"(?:from|between) {_MONTH} (?:to|and|until|till|through) (?P<month2>{_alt(MONTHS)}){_YEAR}?",
        _months_between,
    ),
    (
        rf"between {_MONTH} {_DAY} and (?:(?P<month2>{_alt(MONTHS)}) )?(?P<day2>[12]\d|3[01]|0?[1-9])"
        rf"(?:st|nd|rd|th)?{_YEAR}?",
        _days_between,
    ),
    (rf"{_MONTH} {_DAY}(?:{_YEAR}|{_COUNTED})", _on_day),
    (rf"{_DAY} (?:of |de )?{_MONTH}{_YEAR}?", _on_day),
    (r"(?P<year>\d{4})-(?P<m>\d{2})-(?P<day>\d{2})", _iso_day),
    (rf"(?:in|within|over|during) (?:the )?(?:last|past) (?:{_N} )?{_UNIT}", _within),
    (rf"(?:the )?(?:last|past) {_N} {_UNIT}", _within),
    (
        rf"(?:in den letzten|en los últimos|en las últimas|nos últimos|nas últimas|negli ultimi"
        rf"|nelle ultime) {_N} {_UNIT}",
        _within,
    ),
    (rf"{_N} {_UNIT} (?:ago|fa|atrás|atras)", _ago),
    (rf"(?:vor|hace|há|il y a) {_N} {_UNIT}", _ago),
    (
        rf"{_LAST_OR_IN}(?P<season>{_alt(SEASONS)})(?: (?P<after>{_AFTER_LAST}))?"
        rf"(?: (?:of )?(?P<year>\d{{4}}))?",
        _season,
    ),
    (
        rf"{_LAST_OR_IN}(?:(?:the )?month of |mes de |nel mese di )?(?P<month>{_alt(MONTHS)})"
        rf"(?: (?P<after>{_AFTER_LAST}))?(?:,? (?P<year>\d{{4}}))?",
        _month,
    ),
    (r"(?:last|past|previous) weekend", _weekend),
    (rf"(?:last|on) (?P<weekday>{_alt(WEEKDAYS)})", _weekday),
    (rf"{_LAST} {_UNIT}", _last_unit),
    (rf"{_ARTICLE}?{_UNIT} {_AFTER_LAST}", _last_unit),
    (rf"{_THIS} {_UNIT}", _this_unit),
    (
        r"(?:day before yesterday|yesterday|vorgestern|gestern|avant-hier|anteayer|ayer|anteontem|ontem"
        r"|l'altro ieri|ieri)",
        _yesterday,
    ),
    (r"(?:in|during|im jahr|im|en el año|en|no ano|em|nel|durante) (?P<year>\d{4})", _year_named),
    (r"(?:since|seit|depuis|desde|dal) (?P<year>\d{4})", _since_year),
]
READERS = [(re.compile(f"{_B}{pattern}{_E}"), read) for pattern, read in _ORDERED]


def window(query: str, now: datetime) -> Window | None:
    """The span of time the query asks about, or None (see the module's docstring).

    Of the expressions found, the first in the query wins (the longest where two start
    at the same word); one that names no readable span is passed over.
    """
    text, now = " ".join(query.lower().split()), now.astimezone(UTC)
    found = sorted(
        (m.start(), -len(m.group(0)), i, m)
        for i, (pattern, _) in enumerate(READERS)
        for m in pattern.finditer(text)
    )
    for _, _, i, m in found:
        try:
            start, end = READERS[i][1](m, now)
        except (ValueError, OverflowError):
            continue  # a date no calendar here holds
        if start.year >= MIN_YEAR and start < end:
            return Window(start, end, m.group(0))
    return None
