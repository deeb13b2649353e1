"""Activity: the person's recent turns, each with its state and what it taught, a Retry for a
failed one, and a chart of what was learnt, corrected, held and erased day by day.

A page view asks two things of the store: a page of turns, and the audit log, which gives the
chart's counts and the words of the memories the turns link to (`tally`, `labels`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from starlette.requests import Request
from starlette.responses import Response

from ..domain import Action, Event, InvalidInput, as_utc
from .forms import fact_id, number
from .render import page, redirect
from .routing import web_router
from .session import FormDep, SessionDep, accounts_of, memory_of
from .taught import dropped, kinds, said

router = web_router()

TURNS_PER_PAGE = 20
DAYS = 14
SERIES = (("learnt", "learnt"), ("corrected", "corrected"), ("held", "held for review"), ("erased", "erased"))


@dataclass(frozen=True, slots=True)
class Day:
    day: date
    learnt: int = 0
    corrected: int = 0
    held: int = 0
    erased: int = 0

    @property
    def total(self) -> int:
        return self.learnt + self.corrected + self.held + self.erased


def series_of(event: Event) -> str | None:
    """The chart's series an event counts in: a memory created (held when it is a candidate),
    corrected (edited, or replaced by another: the supersede counts, not the replacement's
    creation), erased; None for the rest."""
    after = event.after or {}
    if event.action == Action.CREATE:
        if after.get("status") == "candidate":
            return "held"
        return None if after.get("supersedes") else "learnt"  # a correction: counted by its supersede
    if event.action in (Action.EDIT, Action.SUPERSEDE):
        return "corrected"
    return "erased" if event.action == Action.PURGE else None


def tally(events: Iterable[Event], today: date, days: int = DAYS) -> list[Day]:
    """Counts per UTC day of the `days` days up to `today`, oldest first."""
    first = today - timedelta(days=days - 1)
    counts: dict[date, dict[str, int]] = {first + timedelta(days=i): {} for i in range(days)}
    for event in events:
        day, series = as_utc(event.at).date(), series_of(event)
        if series is not None and day in counts:
            counts[day][series] = counts[day].get(series, 0) + 1
    return [Day(day, **found) for day, found in counts.items()]


def labels(events: Iterable[Event]) -> dict[str, str | None]:
    """Each memory's words as its latest event holds them; None for one erased."""
    out: dict[str, str | None] = {}
    for event in events:
        snap = event.after or {}
        out[event.fact_id] = None if event.redacted or snap.get("purged") else snap.get("text")
    return out


@dataclass(frozen=True, slots=True)
class Bar:
    """One day's stacked bar, in the SVG's units."""

    x: float
    label: str
    day: Day
    parts: tuple[tuple[str, float, float], ...]  # (series, y, height)


WIDTH, HEIGHT, TOP, BOTTOM = 420, 145, 8, 124  # the drawing area runs from TOP to BOTTOM


def bars(days: Sequence[Day]) -> tuple[list[Bar], int]:
    """The chart's bars and the count its top stands for (at least 1)."""
    peak = max([d.total for d in days] + [1])
    step = WIDTH / max(len(days), 1)
    out = []
    for i, d in enumerate(days):
        y, parts = float(BOTTOM), []
        for series, _ in SERIES:
            height = (BOTTOM - TOP) * getattr(d, series) / peak
            if height:
                y -= height
                parts.append((series, round(y, 2), round(height, 2)))
        out.append(Bar(round(i * step + step * 0.2, 2), str(d.day.day), d, tuple(parts)))
    return out, peak


@router.get("/activity")
async def activity(request: Request, session: SessionDep) -> Response:
    memory = memory_of(request)
    offset = number(request.query_params.get("offset"), 0) or 0
    turns = await memory.turns(session.user.id, limit=TURNS_PER_PAGE + 1, offset=offset)
    events = await memory.events(session.user.id)
    days = tally(events, as_utc(memory.clock()).date())
    drawn, peak = bars(days)
    return page(
        request,
        "activity.html",
        section="activity",
        turns=turns[:TURNS_PER_PAGE],
        openings=await memory.openings(session.user.id, turns[:TURNS_PER_PAGE]),
        agent_names={a.id: a.name for a in await accounts_of(request).agents(session.user.id)},
        more=len(turns) > TURNS_PER_PAGE,
        offset=offset,
        per_page=TURNS_PER_PAGE,
        url_at=lambda at: f"/activity?offset={at}",
        labels=labels(events),
        kinds=kinds,
        said=said,
        dropped=dropped,
        days=days,
        bars=drawn,
        peak=peak,
        series=SERIES,
        totals={name: sum(getattr(d, name) for d in days) for name, _ in SERIES},
        chart={"width": WIDTH, "height": HEIGHT, "top": TOP, "bottom": BOTTOM, "days": DAYS},
    )


@router.post("/activity/{turn_id}/retry")
async def retry(request: Request, session: SessionDep, form: FormDep, turn_id: str) -> Response:
    turn_id = fact_id(turn_id, "turn")
    try:
        await memory_of(request).retry_turn(session.user.id, turn_id)
    except InvalidInput:
        said = "Nothing was changed: that turn has not failed, so there is nothing to retry."
        return redirect("/activity", said, kind="error")
    return redirect("/activity", "Queued again: it will be learnt from shortly.")
