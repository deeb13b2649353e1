"""Every way a fact can change, as pure functions that return the Changes to commit.

The extractor's writer and a person's edits go through these same functions,
so a fact's lifecycle has one definition.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..domain import (
    Action,
    Category,
    Change,
    Fact,
    InvalidInput,
    Scope,
    Source,
    Status,
    clean_text,
    new_id,
)


def new_fact(
    scope: Scope,
    text: str,
    *,
    now: datetime,
    source: Source,
    status: Status = Status.ACTIVE,
    category: Category = Category.OTHER,
    confidence: float = 1.0,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    embedding_model: str | None = None,
    pinned: bool = False,
    supersedes: str | None = None,
    created_at: datetime | None = None,
) -> Fact:
    """A new fact, made `now`; `created_at`, when it was first said elsewhere (an import), if earlier."""
    said = min(created_at, now) if created_at else now
    return Fact(
        id=new_id(),
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        text=clean_text(text),
        category=category,
        status=status,
        confidence=max(0.0, min(1.0, confidence)),
        created_at=said,
        recorded_at=now if status == Status.ACTIVE else None,
        source=source,
        valid_from=valid_from,
        valid_to=valid_to,
        embedding_model=embedding_model,
        pinned=pinned,
        supersedes=supersedes,
        last_seen_at=said,
    )


def create(fact: Fact, vector: Any, actor: str, reason: str | None = None) -> Change:
    return Change(fact, Action.CREATE, actor, reason=reason, vector=vector)


def _bump(fact: Fact, **changes: Any) -> Fact:
    return fact.evolve(version=fact.version + 1, **changes)


def _require(fact: Fact, *statuses: Status, doing: str) -> None:
    if fact.purged:
        raise InvalidInput(f"memory {fact.id} was purged")
    if fact.status not in statuses:
        raise InvalidInput(f"cannot {doing} a memory that is {fact.status}")


def edit(
    fact: Fact,
    text: str,
    *,
    now: datetime,
    vector: Any,
    embedding_model: str | None,
    actor: str,
    reason: str | None = None,
    category: Category | None = None,
    confidence: float | None = None,
) -> Change:
    """A correction of the same fact: same id and created date, new text and version."""
    _require(fact, Status.ACTIVE, Status.CANDIDATE, doing="edit")
    after = _bump(
        fact,
        text=clean_text(text),
        embedding_model=embedding_model,
        category=category or fact.category,
        confidence=fact.confidence if confidence is None else confidence,
        last_seen_at=now,
    )
    return Change(after, Action.EDIT, actor, before=fact, reason=reason, vector=vector)


def end(
    fact: Fact, valid_to: datetime | None, *, now: datetime, actor: str, reason: str | None = None
) -> Change:
    """When the fact stops being true set, moved or cleared (None): the same fact, a new version.
    Past its end it is not recalled as true now; it stays, and is found for the time it held."""
    _require(fact, Status.ACTIVE, Status.CANDIDATE, doing="set the end of")
    said = f"ends {valid_to.date().isoformat()}" if valid_to is not None else "no end"
    after = _bump(fact, valid_to=valid_to, last_seen_at=now)
    return Change(after, Action.EDIT, actor, before=fact, reason=reason or said)


def supersede(old: Fact, new: Fact, *, now: datetime, actor: str, reason: str | None = None) -> Change:
    """The world changed: `new` (already created) replaces `old`."""
    _require(old, Status.ACTIVE, doing="supersede")
    after = _bump(
        old,
        status=Status.SUPERSEDED,
        superseded_by=new.id,
        valid_to=new.valid_from or now,
        retired_at=now,
    )
    return Change(after, Action.SUPERSEDE, actor, before=old, reason=reason)


def retract(fact: Fact, *, now: datetime, actor: str, reason: str | None = None) -> Change:
    """No longer true, and nothing replaces it: a tombstone that recall skips."""
    _require(fact, Status.ACTIVE, doing="retract")
    after = _bump(fact, status=Status.RETRACTED, valid_to=fact.valid_to or now, retired_at=now)
    return Change(after, Action.RETRACT, actor, before=fact, reason=reason)


def restore(fact: Fact, *, now: datetime, actor: str, reason: str | None = None) -> Change:
    _require(fact, Status.RETRACTED, Status.SUPERSEDED, Status.REJECTED, doing="restore")
    after = _bump(
        fact,
        status=Status.ACTIVE,
        valid_to=None,
        retired_at=None,
        superseded_by=None,
        recorded_at=now,
        last_seen_at=now,
    )
    return Change(after, Action.RESTORE, actor, before=fact, reason=reason)


def approve(fact: Fact, *, now: datetime, actor: str, reason: str | None = None) -> Change:
    _require(fact, Status.CANDIDATE, doing="approve")
    after = _bump(fact, status=Status.ACTIVE, recorded_at=now, last_seen_at=now)
    return Change(after, Action.APPROVE, actor, before=fact, reason=reason)


def unapprove(fact: Fact, recorded_at: datetime | None, *, actor: str, reason: str | None = None) -> Change:
    """An approval taken back: the fact waits for review again, recorded when it was before the
    approval (`recorded_at`, from the approval's event)."""
    _require(fact, Status.ACTIVE, doing="take back the approval of")
    after = _bump(fact, status=Status.CANDIDATE, recorded_at=recorded_at)
    return Change(after, Action.UNAPPROVE, actor, before=fact, reason=reason)


def reject(fact: Fact, *, now: datetime, actor: str, reason: str | None = None) -> Change:
    _require(fact, Status.CANDIDATE, doing="reject")
    after = _bump(fact, status=Status.REJECTED, retired_at=now)
    return Change(after, Action.REJECT, actor, before=fact, reason=reason)


def reinforce(
    fact: Fact, *, now: datetime, actor: str, reason: str | None = None, mentions: int = 1
) -> Change:
    """The fact was stated again (`mentions` times): count it and refresh it rather than add a
    row. A candidate waiting for review is reinforced the same way."""
    _require(fact, Status.ACTIVE, Status.CANDIDATE, doing="reinforce")
    after = _bump(fact, mentions=fact.mentions + mentions, last_seen_at=now)
    return Change(after, Action.REINFORCE, actor, before=fact, reason=reason)


def restated_end(fact: Fact, said: datetime | None, now: datetime) -> datetime | None:
    """The end a fact keeps when it is said again: the one the new words give; none when they
    give none of a fact whose end has passed (it is true again now); else its own."""
    if said is not None:
        return said
    return None if fact.ended(now) else fact.valid_to


def merge(candidate: Fact, into: Fact, *, now: datetime, actor: str) -> Change:
    """Approving a candidate whose text is already `into`, an active fact: the candidate is
    closed as superseded by it (the caller reinforces `into`), so no text is active twice."""
    _require(candidate, Status.CANDIDATE, doing="approve")
    after = _bump(candidate, status=Status.SUPERSEDED, superseded_by=into.id, retired_at=now)
    reason = f"approved: memory {into.id} says the same and was reinforced"
    return Change(after, Action.APPROVE, actor, before=candidate, reason=reason)


def pin(fact: Fact, pinned: bool, *, actor: str) -> Change:
    _require(fact, Status.ACTIVE, Status.CANDIDATE, doing="pin")
    if fact.pinned == pinned:
        raise InvalidInput(f"memory {fact.id} is {'pinned' if pinned else 'not pinned'} already")
    return Change(_bump(fact, pinned=pinned), Action.PIN if pinned else Action.UNPIN, actor, before=fact)


def purge(fact: Fact, *, now: datetime, actor: str, reason: str | None = None) -> Change:
    """Erase the text, here and in every past event; the events themselves stay."""
    if fact.purged:
        raise InvalidInput(f"memory {fact.id} was already purged")
    # a purged fact leaves recall and the review queue for good
    status = {Status.ACTIVE: Status.RETRACTED, Status.CANDIDATE: Status.REJECTED}.get(
        fact.status, fact.status
    )
    after = _bump(
        fact,
        text="",
        purged=True,
        status=status,
        retired_at=fact.retired_at or now,
        embedding_model=None,
        pinned=False,
    )
    return Change(after, Action.PURGE, actor, before=fact, reason=reason, redact=True)
