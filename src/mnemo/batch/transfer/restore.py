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

import math
from dataclasses import dataclass, field
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
    is_unicode,
    parse_time,
)
from ...memory import Memory
from ...store.base import AccountStore, AuditLog, ConversationStore, FactStore, TransferStore
from ..export import FORMAT
from .formats import json_lines
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
    for number, record in json_lines(path):
        where = f"line {number}"
        if not isinstance(record, dict):
            raise InvalidInput(f"{where}: expected a JSON object")
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
                export.conversations.append(_conversation(record, export.user.id))
            elif kind == "recall":
                export.recalls += 1  # left out: what assistants were given on the server it came from
            elif kind == "end":
                end = record
            else:
                raise InvalidInput(f"{where}: unknown record type {kind!r}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(
                f"{where}: a {kind or 'record'} record that cannot be read ({exc!r})"
            ) from None
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
    user = User(
        str(data["id"]),
        str(data["name"]),
        enabled,
        ReviewPolicy(data.get("review_policy", "auto")),
        record_recalls=bool(data.get("record_recalls", True)),
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
    return fact


def _agent(r: dict[str, Any], user_id: str) -> Agent:
    return Agent(
        str(r["id"]),
        user_id,
        str(r["name"]),
        bool(r.get("private")),
        bool(r.get("reads_default")),
        r.get("persona"),
        r.get("upstream_model"),
    )


def _event(r: dict[str, Any], user_id: str, fact_id: str, where: str) -> Event:
    if r["fact_id"] != fact_id:
        raise InvalidInput(f"{where}: an event of another fact ({r['fact_id']}) in fact {fact_id}")
    return Event(
        seq=int(r["seq"]),
        at=parse_time(r["at"]),
        user_id=user_id,
        fact_id=fact_id,
        action=Action(r["action"]),
        actor=str(r["actor"]),
        reason=r.get("reason"),
        before=r.get("before"),
        after=r.get("after"),
        digest=str(r["digest"]),
        prev_hash=str(r["prev_hash"]),
        hash=str(r["hash"]),
        redacted=bool(r.get("redacted")),
        salt=r.get("salt"),  # files before format 3 have none: their digests cover the content alone
        redacted_for=r.get("redacted_for"),
    )


def _conversation(r: dict[str, Any], user_id: str) -> Conversation:
    created = parse_time(r["created_at"])
    messages = tuple(
        Message(str(m["role"]), str(m["content"]), str(m["id"]), parse_time(m.get("at")) or created)
        for m in r["messages"]
    )
    marks = tuple(
        BackfillMark(
            str(r["id"]),
            str(m["turn_id"]),
            str(m["run_id"]),
            parse_time(m["said_at"]),
            parse_time(m.get("processed_at")),
        )
        for m in r.get("backfill", ())  # files written before format 2 had none
    )
    return Conversation(str(r["id"]), user_id, r.get("agent_id"), created, messages, marks)


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
        await store.import_user(User(user.id, name, user.memory_enabled, user.review_policy, gate=user.gate))
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
