"""Conversions between the stores' rows and mnemo's plain types, and the columns they select.

Both databases answer in these shapes: times as text (SQLite) or datetimes (PostgreSQL), which
`parse_time` takes either way; JSON as text (SQLite) or as its value (PostgreSQL's jsonb), which
`load` takes either way; booleans as 0/1 or as booleans."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ..domain import (
    Action,
    Agent,
    ApiKey,
    Category,
    Event,
    Fact,
    GatePolicy,
    Job,
    JobStatus,
    ReviewPolicy,
    Source,
    Status,
    User,
    as_utc,
    parse_time,
)

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")


def readable(rows: Iterable[R], convert: Callable[[R], T], what: str, key: int) -> Iterator[tuple[R, T]]:
    """Each row with what it converts to. A row that cannot be read (a time no store should
    hold, broken JSON) is left out and logged by its id (`row[key]`), never its text: one bad
    row must not take a whole list, search, export or learning job down with it."""
    for row in rows:
        try:
            yield row, convert(row)
        except (ValueError, TypeError, KeyError) as exc:  # JSON and time errors are ValueErrors
            log.error("%s %s cannot be read and is left out: %s", what, row[key], exc)  # type: ignore[index]


def ts(value: datetime | None) -> str | None:
    """Times are stored as fixed-width UTC strings, so that text order is time order: four-digit
    years (strftime's %Y writes the year 874 as "874"), and always the microseconds."""
    if value is None:
        return None
    return as_utc(value).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def load(value: Any) -> Any:
    """A JSON column's value: parsed from text, or as the driver decoded it already."""
    return json.loads(value) if isinstance(value, str) else value


def when(value: str | datetime | None) -> datetime:
    """A time a row must have (ValueError when it has none: the row cannot be read)."""
    found = parse_time(value)
    if found is None:
        raise ValueError("a required time is missing")
    return found


DbRow = Sequence[Any]


def user_from(row: DbRow) -> User:
    return User(
        id=row[0],
        name=row[1],
        memory_enabled=None if row[3] is None else bool(row[3]),
        review_policy=ReviewPolicy(row[4]),
        created_at=when(row[2]),
        record_recalls=bool(row[5]),
        gate=GatePolicy().changed(load(row[6]) or {}),
        review_stale=bool(row[7]),
        disabled_at=parse_time(row[8]),
    )


USER_COLUMNS = (
    "id, name, created_at, memory_enabled, review_policy, record_recalls, sensitive_gate, review_stale,"
    " disabled_at"
)
AGENT_COLUMNS = "id, user_id, name, private, reads_default, persona, upstream_model"
KEY_COLUMNS = "id, user_id, name, secret_hash, created_at, revoked_at, last_used_at"


def agent_from(r: DbRow) -> Agent:
    return Agent(r[0], r[1], r[2], bool(r[3]), bool(r[4]), r[5], r[6])


def key_from(r: DbRow) -> ApiKey:
    return ApiKey(r[0], r[1], r[2], r[3], when(r[4]), parse_time(r[5]), parse_time(r[6]))


_FACT_NAMES = (
    "rowid, id, user_id, agent_id, text, category, status, confidence, created_at, recorded_at,"
    " retired_at, valid_from, valid_to, supersedes, superseded_by, version, source,"
    " embedding_model, pinned, mentions, last_seen_at, purged"
).split(", ")
FACT_COLUMNS = ", ".join("f." + c for c in _FACT_NAMES)
_FACT_WIDTH = len(_FACT_NAMES)


class ParsedFacts:
    """Facts already parsed from rows, by the row itself, each kept up to `ttl` seconds.

    Parsing a fact row (six times, JSON, enums, checks) costs about 30 us; a recall reads some
    50 rows, many the same from one arm to the next and from one turn to the next (the pinned
    and recent facts). A row that differs in any column is another key, so a fact is never
    served as it was before a change. What a purge erased leaves at once when the purge was
    this process's (`forget`, on its commit), and within `ttl` when another process's. Rows
    that cannot be hashed (PostgreSQL's jsonb comes as a dict) are parsed every time."""

    def __init__(self, ttl: float = 60.0, max_rows: int = 8192) -> None:
        self.ttl = ttl
        self.max_rows = max_rows
        self._facts: OrderedDict[tuple[Any, ...], tuple[float, Fact]] = OrderedDict()
        self._lock = threading.Lock()

    def fact(self, r: DbRow) -> Fact:
        key = tuple(r[:_FACT_WIDTH])
        now = time.monotonic()
        try:
            with self._lock:
                kept = self._facts.get(key)
        except TypeError:  # unhashable
            return _parse_fact(r)
        if kept is not None and kept[0] > now:
            return kept[1]
        fact = _parse_fact(r)
        with self._lock:
            self._facts[key] = (now + self.ttl, fact)
            self._facts.move_to_end(key)
            while len(self._facts) > self.max_rows:
                self._facts.popitem(last=False)
        return fact

    def forget(self) -> None:
        with self._lock:
            self._facts.clear()


PARSED_FACTS = ParsedFacts()


def fact_from(r: DbRow) -> Fact:
    """The fact of a row of FACT_COLUMNS (and maybe more columns after them)."""
    return PARSED_FACTS.fact(r)


def _parse_fact(r: DbRow) -> Fact:
    return Fact(
        id=r[1],
        user_id=r[2],
        agent_id=r[3],
        text=r[4],
        category=Category(r[5]),
        status=Status(r[6]),
        confidence=r[7],
        created_at=when(r[8]),
        recorded_at=parse_time(r[9]),
        retired_at=parse_time(r[10]),
        valid_from=parse_time(r[11]),
        valid_to=parse_time(r[12]),
        supersedes=r[13],
        superseded_by=r[14],
        version=r[15],
        source=Source.from_json(load(r[16])),
        embedding_model=r[17],
        pinned=bool(r[18]),
        mentions=r[19],
        last_seen_at=parse_time(r[20]),
        purged=bool(r[21]),
    )


EVENT_COLUMNS = (
    "seq, at, user_id, fact_id, action, actor, reason, before, after, digest, prev_hash, hash, redacted,"
    " salt, redacted_for"
)


def event_from(r: DbRow) -> Event:
    return Event(
        seq=r[0],
        at=when(r[1]),
        user_id=r[2],
        fact_id=r[3],
        action=Action(r[4]),
        actor=r[5],
        reason=r[6],
        before=load(r[7]),
        after=load(r[8]),
        digest=r[9],
        prev_hash=r[10],
        hash=r[11],
        redacted=bool(r[12]),
        salt=r[13],
        redacted_for=r[14],
    )


JOB_COLUMNS = (
    "id, user_id, agent_id, conversation_id, message_ids, automation, turn_at, status, attempts,"
    " next_attempt_at, created_at, lease_until, claimed_by, last_error, result, finished_at"
)


def job_from(r: DbRow) -> Job:
    return Job(
        id=r[0],
        user_id=r[1],
        agent_id=r[2],
        conversation_id=r[3],
        message_ids=tuple(load(r[4])),
        automation=bool(r[5]),
        turn_at=when(r[6]),
        status=JobStatus(r[7]),
        attempts=r[8],
        next_attempt_at=when(r[9]),
        created_at=when(r[10]),
        lease_until=parse_time(r[11]),
        claimed_by=r[12],
        last_error=r[13],
        result=load(r[14]),
        finished_at=parse_time(r[15]),
    )
