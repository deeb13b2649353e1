"""What every store checks of a batch of changes before applying it, and the keys that must
stay unique once it is applied (both stores run these checks inside their transaction)."""

from __future__ import annotations

from collections.abc import Sequence

from ..domain import Action, Change, InvalidInput, Status

# at most one fact per agent, text and one of these statuses (see Duplicate)
UNIQUE_STATUSES = (Status.ACTIVE, Status.CANDIDATE)


def check(user_id: str, changes: Sequence[Change]) -> None:
    for change in changes:
        if change.fact.user_id != user_id:
            raise InvalidInput("a change names another user's fact")
        if change.before is None and change.action != Action.CREATE:
            raise InvalidInput(f"{change.action} needs the fact as it was")


def living_agents(changes: Sequence[Change]) -> set[str]:
    """The agents of the facts the batch creates or brings back (active, or held for review):
    each must still be there when it is applied, or a deleted agent would hold a living fact
    that no assistant recalls."""
    return {
        c.fact.agent_id
        for c in changes
        if c.fact.agent_id is not None
        and c.fact.status in UNIQUE_STATUSES
        and (c.before is None or c.before.status not in UNIQUE_STATUSES)
    }


def unique_keys(changes: Sequence[Change]) -> set[tuple[str, str, str]]:
    """(agent key, text hash, status) of every fact the batch brings into a unique status, or
    whose text or agent it changes there: the keys to look for twins of once it is applied."""
    keys = set()
    for c in changes:
        f, b = c.fact, c.before
        if f.purged or f.status not in UNIQUE_STATUSES:
            continue
        key = (f.agent_id or "", f.text_hash, str(f.status))
        if b is None or (b.agent_id or "", b.text_hash, str(b.status)) != key:
            keys.add(key)
    return keys
