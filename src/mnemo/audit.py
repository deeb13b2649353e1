"""The hash chain of the audit log, and the reconstruction of past belief from it.

Each event carries a digest of its content and chains over that digest, not over
the content, so that a purge may erase text from past events and the chain
still verifies: a purged event keeps its digest, and only its content check is
waived — and only when the chain itself holds the purge of that fact.

The digest covers a random salt of the event's own as well as its content, and
a purge erases the salt with the text. Without it, a digest (or the hashes that
chain over it) would let anyone holding them confirm a guess at the erased text
offline: "My bank PIN is 4426" falls to ten thousand tries. Events written
before salts existed (and files exported then) carry none: their digests
cover the content alone and still verify; when a purge erases such an event,
its digest is replaced by a random one and the chain after it is sealed again
(`resealed`), since that digest is a commitment to the text itself.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from .domain import Action, AuditReport, Change, Event, Fact, GateNotice, normalise

GENESIS = "0" * 64


def content_digest(
    *,
    at: datetime,
    user_id: str,
    fact_id: str,
    action: str,
    actor: str,
    reason: str | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    salt: str | None,
) -> str:
    body: dict[str, Any] = {
        "at": at.isoformat(),
        "user_id": user_id,
        "fact_id": fact_id,
        "action": str(action),
        "actor": actor,
        "reason": reason,
        "before": before,
        "after": after,
    }
    if salt is not None:  # events from before salts: their digests cover the content alone
        body["salt"] = salt
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def chain_hash(prev_hash: str, digest: str) -> str:
    return hashlib.sha256(f"{prev_hash}:{digest}".encode()).hexdigest()


def seal(change: Change, user_id: str, at: datetime, prev: str) -> Event:
    """The event that records `change`, chained after `prev` (its seq is the store's to give)."""
    before = change.before.snapshot() if change.before else None
    if change.redact:
        before = redact(before)
    return _sealed(
        user_id,
        at,
        prev,
        change.fact.id,
        change.action,
        change.actor,
        change.reason,
        before,
        change.fact.snapshot(),
    )


def seal_notice(notice: GateNotice, user_id: str, at: datetime, prev: str) -> Event:
    """The event that records what the sensitive-data gate did where no fact changed: no fact
    id, the category, action and count, never the value."""
    return _sealed(user_id, at, prev, "", Action.GATE, "gate", notice.reason, None, notice.snapshot())


def _sealed(
    user_id: str,
    at: datetime,
    prev: str,
    fact_id: str,
    action: Action,
    actor: str,
    reason: str | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> Event:
    salt = secrets.token_hex(16)
    digest = content_digest(
        at=at,
        user_id=user_id,
        fact_id=fact_id,
        action=action,
        actor=actor,
        reason=reason,
        before=before,
        after=after,
        salt=salt,
    )
    return Event(
        0,
        at,
        user_id,
        fact_id,
        action,
        actor,
        reason,
        before,
        after,
        digest,
        prev,
        chain_hash(prev, digest),
        salt=salt,
    )


def event_row(e: Event) -> tuple[str | None, ...]:
    """An event's stored columns: at, user_id, fact_id, action, actor, reason, before,
    after (JSON text), digest, prev_hash, hash, salt."""

    def as_json(value: Any) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False)

    return (
        e.at.isoformat(),
        e.user_id,
        e.fact_id,
        str(e.action),
        e.actor,
        e.reason,
        as_json(e.before),
        as_json(e.after),
        e.digest,
        e.prev_hash,
        e.hash,
        e.salt,
    )


def resealed(events: Sequence[tuple[int, str, bool]], prev: str) -> list[tuple[int, str, str, str]]:
    """The chain from these events on, sealed again after `prev`: (seq, digest, prev_hash, hash)
    for each (seq, digest, replace) in order, where a `replace`d digest (a redacted event's
    from before salts) becomes a random one."""
    out = []
    for seq, digest, replace in events:
        if replace:
            digest = secrets.token_hex(32)
        hashed = chain_hash(prev, digest)
        out.append((seq, digest, prev, hashed))
        prev = hashed
    return out


def texts_of(snapshots: Iterable[tuple[dict[str, Any] | None, dict[str, Any] | None]]) -> set[str]:
    """Every text a fact had, from its events' (before, after) snapshots."""
    return {t for pair in snapshots for s in pair if s and (t := s.get("text"))}


_WORD = re.compile(r"\w+")


def tells_of(reason: str, texts: Iterable[str]) -> bool:
    """Whether an event's reason may speak of a fact that had these texts: it quotes one (case,
    width and spacing aside), or shares a number or code of three characters or more with one,
    or two of its words of four letters or more. Erring towards erasing: a reason is commentary,
    and the purged text must not outlive the purge in it."""
    said = normalise(reason)
    words = set(_WORD.findall(said))
    for text in texts:
        own = normalise(text)
        if own in said:
            return True
        tokens = set(_WORD.findall(own)) & words
        if any(len(t) >= 3 and any(c.isdigit() for c in t) for t in tokens):
            return True
        if sum(1 for t in tokens if len(t) >= 4 and t.isalpha()) >= 2:
            return True
    return False


def redact(snapshot: dict[str, Any] | None) -> dict[str, Any] | None:
    """A snapshot with its text erased (purge)."""
    if snapshot is None:
        return None
    return {**snapshot, "text": None, "purged": True}


def verify(events: Iterable[Event]) -> AuditReport:
    """Check one user's events, in order: the chain links and each unredacted digest."""
    events = list(events)
    purged = {e.fact_id for e in events if e.action == Action.PURGE}
    problems: list[str] = []
    prev = GENESIS
    for e in events:
        if e.prev_hash != prev:
            problems.append(f"event {e.seq}: prev_hash does not match the event before it")
        if e.hash != chain_hash(e.prev_hash, e.digest):
            problems.append(f"event {e.seq}: hash does not match its digest")
        if e.redacted:
            if e.fact_id not in purged:
                problems.append(f"event {e.seq}: redacted, but no purge of fact {e.fact_id} is recorded")
            elif any((s or {}).get("text") for s in (e.before, e.after)):
                problems.append(f"event {e.seq}: redacted, but still holds text")
            elif e.salt is not None:
                problems.append(f"event {e.seq}: redacted, but still holds its salt")
        elif e.redacted_for is not None:  # its reason told of a purged fact, and was erased
            if e.redacted_for not in purged:
                problems.append(f"event {e.seq}: its reason was erased, but no purge of {e.redacted_for}")
            elif e.reason is not None or e.salt is not None:
                problems.append(f"event {e.seq}: its reason was erased, but it still holds it or its salt")
        else:
            expected = content_digest(
                at=e.at,
                user_id=e.user_id,
                fact_id=e.fact_id,
                action=e.action,
                actor=e.actor,
                reason=e.reason,
                before=e.before,
                after=e.after,
                salt=e.salt,
            )
            if expected != e.digest:
                problems.append(f"event {e.seq}: content does not match its digest (altered)")
        prev = e.hash
    return AuditReport(ok=not problems, events=len(events), problems=problems)


def believed_at(user_id: str, events: Iterable[Event], at: datetime) -> dict[str, Fact]:
    """Every fact as the store held it at `at`, from the log alone (bitemporal `as_of`)."""
    state: dict[str, Fact] = {}
    for e in events:
        if e.at > at:
            break
        if e.after is not None and e.action != Action.GATE:
            state[e.fact_id] = Fact.from_snapshot(user_id, e.after)
    return state
