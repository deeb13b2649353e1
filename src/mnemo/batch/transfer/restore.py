"""Importing a mnemo export: lossless, resumable and idempotent.

Lossless: the user keeps their id, and the facts their ids, texts, statuses,
versions and times; the events are written as they were, with their times,
digests and hashes, in the order of the person's log, so `mnemo audit verify`
passes on the copy as on the original. The id matters: an event's digest
covers its user's id, so the export can only come back as that user (under
any name). Vectors are not in the file: each fact is embedded again with the
embedder configured here (a fact made by another model records this one, so
that recall finds it).

Resumable and idempotent: the log is written in batches, each one
transaction holding a run of events and the facts that first appear in it
(each fact as it stands now). The user's last event tells how far an
earlier, interrupted import of the same file got: it continues from there,
and a finished import adds nothing the second time. A user who already has
other memories is refused: a history cannot be merged into another one.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ... import audit
from ...accounts import Accounts
from ...domain import (
    Action,
    Agent,
    BackfillMark,
    Conversation,
    Event,
    Fact,
    GatePolicy,
    InvalidInput,
    Message,
    NotFound,
    ReviewPolicy,
    Scope,
    User,
    as_utc,
    is_unicode,
)
from ...memory import Memory
from ...store.base import AccountStore, AuditLog, ConversationStore, FactStore, TransferStore
from ..export import FORMAT
from .formats import json_lines, storable
from .report import ImportRefused, ImportReport, Step, no_step

BATCH = 500  # events (with the facts they bring) per transaction


class TransferTarget(TransferStore, ConversationStore, FactStore, AuditLog, AccountStore, Protocol):
    """What an import writes to and checks against."""


class Destination(Protocol):
    """Where an import writes (`mnemo.build.Core` is one): facts a file adds go through the
    person's Memory, as a person's edits do; a mnemo export's facts, events, agents and
    conversations go into the store as they were, not as new edits."""

    memory: Memory
    accounts: Accounts

    @property
    def store(self) -> TransferTarget: ...


@dataclass
class Export:
    """A mnemo export, read and checked."""

    user: User
    agents: list[Agent] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)  # as in the file: newest first
    events: list[Event] = field(default_factory=list)  # the person's log, in order
    conversations: list[Conversation] = field(default_factory=list)
    recalls: int = 0  # the recall log's rows, counted and left out


def read_export(path: Path) -> Export:
    """The whole file, checked: its records, its end record's counts and its audit log."""
    export: Export | None = None
    end: dict[str, Any] | None = None
    version = FORMAT
    conversations: dict[str, str] = {}  # id: where
    for number, record in json_lines(path):
        where = f"line {number}"
        if not isinstance(record, dict):
            raise InvalidInput(f"{where}: expected a JSON object")
        storable(record, where, "the record")
        kind = record.get("type")
        try:
            if export is None:
                version, user = _header(record, where)
                export = Export(user)
            elif end is not None:
                raise InvalidInput(f"{where}: a record after the end record")
            elif kind == "agent":
                export.agents.append(_agent(record, export.user.id))
            elif kind == "fact":
                fact = _checked(Fact.from_snapshot(export.user.id, record), {a.id for a in export.agents})
                export.facts.append(fact)
                export.events += [_event(e, export.user.id, fact.id, where) for e in record["events"]]
            elif kind == "notice" and version >= 5:
                export.events.append(_event(record, export.user.id, "", where))
            elif kind == "conversation":
                conversation = _conversation(record, export.user.id)
                if conversation.id in conversations:
                    first = conversations[conversation.id]
                    raise InvalidInput(f"{where}: conversation {conversation.id!r} again (as on {first})")
                conversations[conversation.id] = where
                export.conversations.append(conversation)
            elif kind == "recall":
                export.recalls += 1  # left out: what assistants were given on the server it came from
            elif kind == "end":
                end = record
            else:
                raise InvalidInput(f"{where}: unknown record type {kind!r}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            named = kind if isinstance(kind, str) and kind else "record"
            article = "an" if named[0] in "aeiou" else "a"
            raise InvalidInput(f"{where}: {article} {named} record that cannot be read ({exc!r})") from None
    if export is None:
        raise InvalidInput(f"{path} is empty")
    if version >= 2:
        _check_end(export, end)
    export.events.sort(key=lambda e: e.seq)
    if len({e.seq for e in export.events}) != len(export.events):
        raise InvalidInput("two events of the file have the same seq")
    report = audit.verify(export.events)
    if not report.ok:
        shown = "; ".join(report.problems[:3])
        raise InvalidInput(f"the file's audit log does not verify, so it was altered: {shown}")
    return export


def _switch(data: dict[str, Any], name: str) -> bool:
    """A person's on/off switch as exported: true or false; left out or null, on (the default)."""
    value = data.get(name)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise ValueError(f'"{name}" must be true or false')
    return value


def _header(record: dict[str, Any], where: str) -> tuple[int, User]:
    version = record.get("format")
    if record.get("type") == "header" and isinstance(version, int):
        data = record["user"]
    elif record.get("type") == "user" and version == 1:  # the first format: the user was the header
        data = record
    else:
        raise InvalidInput(f"{where}: not a mnemo export (its first record is not a header)")
    if version > FORMAT:
        raise InvalidInput(
            f"{where}: format {version} is newer than this mnemo reads ({FORMAT}); upgrade mnemo"
        )
    enabled = data.get("memory_enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise ValueError('"memory_enabled" must be true, false or null')
    user = User(
        _text(data, "id"),
        _text(data, "name"),
        enabled,
        ReviewPolicy(data.get("review_policy", "auto")),
        record_recalls=_switch(data, "record_recalls"),
        review_stale=_switch(data, "review_stale"),
        gate=GatePolicy().changed(dict(data.get("sensitive_gate") or {})),
    )
    return version, user


_INT = 2**31  # what both stores' integer columns hold


def _checked(fact: Fact, agents: set[str]) -> Fact:
    """A fact as a store can hold it and mnemo could have written it; a ValueError says why not
    (the audit log verifies only what the file's own digests cover, which anyone can compute)."""
    if not (math.isfinite(fact.confidence) and 0.0 <= fact.confidence <= 1.0):
        raise ValueError(f"fact {fact.id}: confidence {fact.confidence} is not between 0 and 1")
    if not (1 <= fact.version < _INT and 1 <= fact.mentions < _INT):
        raise ValueError(f"fact {fact.id}: version {fact.version} or mentions {fact.mentions} out of range")
    if fact.agent_id is not None and fact.agent_id not in agents:
        raise ValueError(f"fact {fact.id}: agent {fact.agent_id} is not one of the file's agents")
    if "\x00" in fact.text or not is_unicode(fact.text):
        raise ValueError(f"fact {fact.id}: its text holds U+0000 or a lone surrogate, which no store holds")
    if fact.created_at is None:
        raise ValueError(f"fact {fact.id}: its created_at is missing")
    named = (fact.agent_id, fact.supersedes, fact.superseded_by, fact.embedding_model)
    if not isinstance(fact.id, str) or not all(v is None or isinstance(v, str) for v in named):
        raise ValueError(
            f"fact {fact.id}: its id, agent_id, supersedes, superseded_by and embedding_model are text"
        )
    return fact  # its times are in UTC, or it was not made (Fact: TimeOutOfRange, a ValueError)


def _text(r: dict[str, Any], key: str) -> str:
    value = r[key]
    if not isinstance(value, str):
        raise ValueError(f'"{key}" must be text')
    return value


def _maybe_text(r: dict[str, Any], key: str) -> str | None:
    return None if r.get(key) is None else _text(r, key)


def _maybe_object(r: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = r.get(key)
    if value is not None and not isinstance(value, dict):
        raise ValueError(f'"{key}" must be an object')
    return value


def _when(r: dict[str, Any], key: str) -> datetime:
    """A time a record must have, as a store holds it (ValueError: absent, or none it holds)."""
    value = r.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f'"{key}" must be an ISO 8601 time')
    return as_utc(datetime.fromisoformat(value))  # naive: UTC


def _maybe_when(r: dict[str, Any], key: str) -> datetime | None:
    return None if r.get(key) in (None, "") else _when(r, key)


def _agent(r: dict[str, Any], user_id: str) -> Agent:
    return Agent(
        _text(r, "id"),
        user_id,
        _text(r, "name"),
        bool(r.get("private")),
        bool(r.get("reads_default")),
        _maybe_text(r, "persona"),
        _maybe_text(r, "upstream_model"),
    )


def _event(r: dict[str, Any], user_id: str, fact_id: str, where: str) -> Event:
    if r["fact_id"] != fact_id:
        raise InvalidInput(f"{where}: an event of another fact ({r['fact_id']}) in fact {fact_id}")
    return Event(
        seq=int(r["seq"]),
        at=_when(r, "at"),
        user_id=user_id,
        fact_id=fact_id,
        action=Action(r["action"]),
        actor=str(r["actor"]),
        reason=_maybe_text(r, "reason"),
        before=_maybe_object(r, "before"),
        after=_maybe_object(r, "after"),
        digest=str(r["digest"]),
        prev_hash=str(r["prev_hash"]),
        hash=str(r["hash"]),
        redacted=bool(r.get("redacted")),
        salt=_maybe_text(r, "salt"),  # files before format 3 have none: their digests cover the content alone
        redacted_for=_maybe_text(r, "redacted_for"),
    )


def _conversation(r: dict[str, Any], user_id: str) -> Conversation:
    created = _when(r, "created_at")
    messages = tuple(
        Message(_text(m, "role"), _text(m, "content"), _text(m, "id"), _maybe_when(m, "at") or created)
        for m in r["messages"]
    )
    if len({m.id for m in messages}) != len(messages):
        raise ValueError("two of its messages have the same id")
    marks = tuple(
        BackfillMark(
            _text(r, "id"),
            _text(m, "turn_id"),
            _text(m, "run_id"),
            _when(m, "said_at"),
            _maybe_when(m, "processed_at"),
        )
        for m in r.get("backfill", ())  # files written before format 2 had none
    )
    return Conversation(
        _text(r, "id"), user_id, _maybe_text(r, "agent_id"), created, messages, marks, _switch(r, "remember")
    )


def _check_end(export: Export, end: dict[str, Any] | None) -> None:
    if end is None:
        raise InvalidInput("the file stops before its end record: it was cut short (export it again)")
    found = {
        "agents": len(export.agents),
        "facts": len(export.facts),
        "events": len(export.events),
        "conversations": len(export.conversations),
        "messages": sum(len(c.messages) for c in export.conversations),
    }
    if "recalls" in end:  # format 4 on
        found["recalls"] = export.recalls
    wrong = [f"{k}: {found[k]} in the file, {end.get(k)} exported" for k in found if end.get(k) != found[k]]
    if wrong:
        raise InvalidInput("the file does not hold what its end record counts (" + "; ".join(wrong) + ")")


# -- writing ----------------------------------------------------------------------------------


async def restore(
    to: Destination,
    export: Export,
    name: str,
    *,
    dry_run: bool = False,
    step: Step = no_step,
    batch: int | None = None,
) -> ImportReport:
    """Import `export` as the user called `name` (created with the export's id if there is none)."""
    store, user = to.store, export.user
    report = ImportReport("mnemo", name, dry_run)
    report.found(agents=len(export.agents), facts=len(export.facts), events=len(export.events))
    report.found(conversations=len(export.conversations))
    existing = await to.accounts.find_user(name)
    if existing is None:
        other = await store.get_user(user.id)
        if other is not None:
            raise ImportRefused(
                f"this export's user is already here as {other.name!r}: import it with --user {other.name}"
            )
    elif existing.id != user.id:
        raise ImportRefused(
            f"user {name!r} already exists here, with another id; an export comes back as its own user"
            " (the audit log covers the id): import it as a new user with --user NEW_NAME"
        )
    start = await _resume_at(to, export, name)
    if dry_run:  # what would be added
        here = {a.id for a in await to.accounts.agents(user.id)}
        report.agents_added = sum(1 for a in export.agents if a.id not in here)
        report.facts_present = sum(1 for i in _first_events(export).values() if i < start)
        report.facts_added = len(export.facts) - report.facts_present
        report.events_added = len(export.events) - start
        for conversation in export.conversations:
            stored = await store.conversation_messages(user.id, conversation.id)
            report.conversation(len(conversation.messages) - len(stored))
        return report
    if existing is None:
        await store.import_user(dataclasses.replace(user, name=name))  # every switch as exported
        report.user_created = True
    for agent in export.agents:
        report.agents_added += await store.import_agent(agent)
    await _facts(to, export, start, batch or BATCH, report, step)
    step("conversations", 0, len(export.conversations))
    for conversation in export.conversations:
        added, dropped = await to.memory.import_conversation(conversation)
        report.conversation(added)
        report.forgotten += dropped
        step("conversations", 1, len(export.conversations))
    report.audit_ok = (await to.memory.verify_audit(user.id)).ok
    return report


async def _resume_at(to: Destination, export: Export, name: str) -> int:
    """Where in the file's log to start: after the user's last event, which must be the file's."""
    head = await to.store.chain_head(export.user.id)
    if head == audit.GENESIS:
        if await to.store.list_facts(Scope(export.user.id, all_agents=True), statuses=None, limit=1):
            raise ImportRefused(
                f"user {name!r} already has memories; a mnemo export goes to a user with none"
            )
        return 0
    for i, event in enumerate(export.events):
        if event.hash == head:
            return i + 1
    raise ImportRefused(
        f"user {name!r} already has memories that are not from this file; a mnemo export goes to"
        " a user with none (or to the one it was being imported into)"
    )


def _first_events(export: Export) -> dict[str, int]:
    """Each fact's first event's place in the log (a fact with none: after the last)."""
    first: dict[str, int] = {}
    for i, event in enumerate(export.events):
        first.setdefault(event.fact_id, i)
    return {f.id: first.get(f.id, len(export.events)) for f in export.facts}


async def _facts(
    to: Destination, export: Export, start: int, size: int, report: ImportReport, step: Step
) -> None:
    first = _first_events(export)
    events = export.events
    # oldest first, so that facts of one instant keep their order (the store's row order)
    facts = sorted(reversed(export.facts), key=lambda f: first[f.id])
    total = len(facts)
    done = [f for f in facts if first[f.id] < start]
    report.facts_present = len(done)
    step("facts", len(done), total)
    pending = facts[len(done) :]
    lo, n = start, len(events)
    while lo < n or pending:
        hi = min(lo + size, n)
        take = pending if hi == n else [f for f in pending if first[f.id] < hi]
        pending = pending[len(take) :]
        if hi == n:  # facts without events (written during the export): those not here yet
            take = [f for f in take if first[f.id] < n or not await _present(to, f)]
        await to.store.import_facts(export.user.id, await _embedded(to, take, report), events[lo:hi])
        report.facts_added += len(take)
        report.events_added += hi - lo
        step("facts", len(take), total)
        lo = hi


async def _present(to: Destination, fact: Fact) -> bool:
    try:
        await to.store.get_fact(Scope(fact.user_id, all_agents=True), fact.id)
    except NotFound:
        return False
    return True


async def _embedded(
    to: Destination, facts: list[Fact], report: ImportReport
) -> list[tuple[Fact, np.ndarray | None]]:
    """Each fact with its vector, made again here (none for a purged fact or one that had none)."""
    model = to.memory.embedder.model_name
    out: list[tuple[Fact, np.ndarray | None]] = [(f, None) for f in facts]
    wanted = [i for i, f in enumerate(facts) if f.embedding_model and f.text and not f.purged]
    if wanted:
        vectors = await to.memory.embedder.embed([facts[i].text for i in wanted])
        for i, vector in zip(wanted, vectors, strict=True):
            fact = facts[i]
            if fact.embedding_model != model:
                fact = fact.evolve(embedding_model=model)
                report.re_embedded += 1
            out[i] = (fact, vector)
    return out
