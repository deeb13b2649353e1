"""When a statement says it stops being true: "this week", "until Friday", "for the next two
months", read against when it was said.

`end_of(text, said)` gives the first end it can read honestly, in UTC (the start of the day
after the last day it holds, so that "until Friday" holds all of Friday), or None. It reads
English, German, French, Spanish, Portuguese and Italian, the languages of an explicit
request ("remember that … until Friday"); a chat model reads the rest (its `valid_to`).

What it reads: the rest of today, this week (to Sunday), this weekend, this month; "until"
(bis, jusqu'à, hasta, até, fino a) a weekday (the next one after the day it was said), tomorrow,
a day of a month ("until March 3", "bis 3. März"; the next one not before the day it was said)
or an ISO date; "for the next N days/weeks/months/years" (für die nächsten, pendant les N
prochains, durante los próximos, pelos próximos, per i prossimi) or "for N more …". A bare
"for two weeks" is not read: "I have been vegan for two years" ends nothing.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from ..time_words import MONTHS, NUMBERS, OTHER_WEEKDAYS, UNITS, WEEKDAYS


def _alt(words: dict[str, int] | tuple[str, ...]) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))


_DAYS = {**WEEKDAYS, **OTHER_WEEKDAYS}
_UNTIL = (
    r"(?:until|till|til|through|bis(?: zum| zur| am)?|jusqu'(?:à|au)|jusqu’(?:à|au)|hasta(?: el)?"
    r"|até(?: (?:a|o))?|fino a(?:l)?)"
)
_TOMORROW = r"(?:tomorrow|morgen|demain|mañana|manana|amanhã|amanha|domani)"
_N = rf"(?P<n>\d{{1,4}}|{_alt(NUMBERS)})"
_UNIT = rf"(?P<unit>{_alt(UNITS)})"
_NEXT = (
    r"(?:for the next|for another|over the next|für die nächsten|für weitere|pendant les"
    r"|durante los|durante las|durante os|durante as|pelos|pelas|per i|per le)"
)
_PROCHAINS = (
    r"(?:\s+(?:prochains|prochaines|próximos|próximas|proximos|proximas|prossimi|prossime|nächsten))?"
)

Reader = Callable[[re.Match[str], date], date | None]


def _next_weekday(m: re.Match[str], said: date) -> date:
    ahead = (_DAYS[m["day"].lower()] - said.weekday()) % 7 or 7
    return said + timedelta(days=ahead)


def _month_day(m: re.Match[str], said: date) -> date | None:
    month, day = MONTHS[m["month"].lower()], int(m["d"])
    for year in (said.year, said.year + 1):
        if day <= monthrange(year, month)[1] and (found := date(year, month, day)) >= said:
            return found
    return None


def _iso(m: re.Match[str], said: date) -> date | None:
    try:
        return date.fromisoformat(m["iso"])
    except ValueError:
        return None


def _count(m: re.Match[str]) -> int:
    n = (m["n"] or "1").lower()  # "for the next year": one
    return int(n) if n.isdigit() else NUMBERS[n]


def _next_units(m: re.Match[str], said: date) -> date:
    unit, n = UNITS[m["unit"].lower()], _count(m)
    if unit == 30:  # calendar months
        month = said.month - 1 + n
        year = said.year + month // 12
        return date(year, month % 12 + 1, min(said.day, monthrange(year, month % 12 + 1)[1])) - timedelta(
            days=1
        )
    if unit == 365:
        return date(
            said.year + n, said.month, min(said.day, monthrange(said.year + n, said.month)[1])
        ) - timedelta(days=1)
    return said + timedelta(days=unit * n - 1)


def _week_end(m: re.Match[str], said: date) -> date:
    return said + timedelta(days=6 - said.weekday())


def _month_end(m: re.Match[str], said: date) -> date:
    return date(said.year, said.month, monthrange(said.year, said.month)[1])


_READERS: list[tuple[re.Pattern[str], Reader]] = [
    (re.compile(rf"\b{_UNTIL}\s+(?P<day>{_alt(_DAYS)})\b", re.I), _next_weekday),
    (re.compile(rf"\b{_UNTIL}\s+{_TOMORROW}\b", re.I), lambda m, said: said + timedelta(days=1)),
    (
        re.compile(
            rf"\b{_UNTIL}\s+(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th|\.|er|º)?(?:\s+(?:of|de|di))?\s+(?P<month>{_alt(MONTHS)})\b",
            re.I,
        ),
        _month_day,
    ),
    (
        re.compile(rf"\b{_UNTIL}\s+(?P<month>{_alt(MONTHS)})\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b", re.I),
        _month_day,
    ),
    (re.compile(rf"\b{_UNTIL}\s+(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b", re.I), _iso),
    (re.compile(rf"\b{_NEXT}{_PROCHAINS}\s+(?:{_N}{_PROCHAINS}\s+)?{_UNIT}\b", re.I), _next_units),
    (re.compile(rf"\bfor\s+{_N}\s+more\s+{_UNIT}\b", re.I), _next_units),
    (
        re.compile(r"\b(?:this week|diese woche|cette semaine|esta semana|questa settimana)\b", re.I),
        _week_end,
    ),
    (
        re.compile(
            r"\b(?:this weekend|dieses wochenende|ce week-end|este fin de semana|este fim de semana"
            r"|questo fine settimana)\b",
            re.I,
        ),
        _week_end,
    ),
    (
        re.compile(r"\b(?:this month|diesen monat|ce mois(?:-ci)?|este mes|este mês|questo mese)\b", re.I),
        _month_end,
    ),
    (re.compile(r"\b(?:today|heute|aujourd'hui|aujourd’hui|hoy|hoje|oggi)\b", re.I), lambda m, said: said),
]


def end_of(text: str, said: datetime) -> datetime | None:
    """When the statement `text`, said at `said`, stops being true: the start (UTC) of the day
    after the last day it holds; None when its words give no end."""
    day = said.astimezone(UTC).date()
    found: list[tuple[int, date]] = []
    for pattern, read in _READERS:
        m = pattern.search(text)
        if m and (last := read(m, day)) is not None and last >= day:
            found.append((m.start(), last))
    if not found:
        return None
    last = min(found)[1]  # the phrase that comes first
    if last.year >= 9999:
        return None
    return datetime.combine(last + timedelta(days=1), datetime.min.time(), UTC)
