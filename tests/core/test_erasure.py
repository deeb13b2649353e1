"""A purged text cannot be confirmed from what mnemo keeps: not from the audit log's digests and
hashes (each event's digest covers a random salt, which the purge erases with the text), not
from an export, and on SQLite not from the database's files either.
"""

from __future__ import annotations

from mnemo import audit, export
from mnemo.domain import Scope
from tests.helpers import texts

PIN = "My bank PIN is 4426"


def _restored(snapshot: dict | None, text: str) -> dict | None:
    return None if snapshot is None else {**snapshot, "text": text, "purged": False}


def _guesses(event, salt: str | None) -> list[str]:
    """The digests a guesser computes for this event's content with each four-digit PIN."""
    out = []
    for guess in range(10_000):
        said = f"My bank PIN is {guess:04d}"
        out.append(
            audit.content_digest(
                at=event.at,
                user_id=event.user_id,
                fact_id=event.fact_id,
                action=event.action,
                actor=event.actor,
                reason=event.reason,
                before=_restored(event.before, said),
                after=_restored(event.after, said),
                salt=salt,
            )
        )
    return out


async def test_a_purged_text_cannot_be_confirmed_from_the_log(memory, alice):
    fact = await memory.add(alice, PIN)
    await memory.add(alice, PIN)  # reinforced: a second event that held the text
    created = (await memory.history(alice, fact.id))[0]
    # the guess works while the salt is there (the check below would catch a leak)
    assert created.digest in _guesses(created, created.salt)

    await memory.purge(alice, fact.id)
    assert (await memory.verify_audit(alice.user_id)).ok
    events = await memory.history(alice, fact.id)
    for event in events[:2]:
        # the salt went with the text: a guesser has only the content to try, and it fails
        assert event.redacted and event.salt is None
        guesses = _guesses(event, None)
        assert event.digest not in guesses
        assert all(audit.chain_hash(event.prev_hash, g) != event.hash for g in guesses)
    user = await memory.store.get_user(alice.user_id)
    lines = [export.line(r) async for r in export.records(memory, user)]
    assert not any("4426" in line for line in lines)
    assert texts(await memory.search("bank PIN", Scope(alice.user_id, all_agents=True))) == []
