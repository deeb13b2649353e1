"""A purged text cannot be confirmed from what mnemo keeps: not from the audit log's digests and
hashes (each event's digest covers a random salt, which the purge erases with the text), not
from an export, and on SQLite not from the database's files either.
"""

from __future__ import annotations

import pytest

from mnemo import audit
from mnemo.batch import export
from mnemo.domain import Scope, Turn
from tests.helpers import extraction, texts

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


@pytest.mark.slow
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
    lines = [export.line(r) async for r in export.records(memory, memory.accounts, user)]
    assert not any("4426" in line for line in lines)
    assert texts(await memory.search("bank PIN", Scope(alice.user_id, all_agents=True))) == []


async def test_purge_erases_the_reasons_that_tell_of_it(llm_memory, scripted_llm, alice):
    """A model's reason quotes the fact it replaced, a person's the fact they retracted: once
    that fact is purged, no event of the person holds its text, while the new fact stays."""
    old = await llm_memory.add(alice, PIN)
    scripted_llm.reply_json(extraction("My bank PIN is 9999"))
    scripted_llm.reply_json(
        {"decisions": [{"new": 1, "action": "supersede", "target": 1, "reason": "replaces: pin is 4426"}]}
    )
    await llm_memory.remember(Turn.of(alice, ("user", "New PIN: 9999."), ("assistant", "Noted.")))
    other = await llm_memory.add(alice, "I keep my cards in a drawer")
    await llm_memory.retract(alice, other.id, reason=f"moved; note it was '{PIN.upper()}'")
    told = [e for e in await llm_memory.events(alice.user_id) if "4426" in (e.reason or "")]
    assert {e.action for e in told} == {
        "create",
        "supersede",
        "retract",
    }  # the new fact's, the old's, the other's
    await llm_memory.purge(alice, old.id)

    events = await llm_memory.events(alice.user_id)
    assert not any("4426" in repr((e.reason, e.before, e.after)) for e in events)
    assert texts(await llm_memory.list(alice)) == ["My bank PIN is 9999"]
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def test_purge_erases_the_copies_of_its_text(memory, alice):
    """A candidate merged into the fact, an earlier copy retracted: both say what the purged fact
    said, and go with it; the same text in another agent's memory stays."""
    everything = Scope(alice.user_id, all_agents=True)
    earlier = await memory.add(alice, PIN)
    await memory.retract(alice, earlier.id)
    held = await memory.add(alice, PIN, held=True)
    fact = await memory.add(alice, PIN)
    assert (await memory.approve(alice, held.id)).id == fact.id  # merged
    agent = await memory.accounts.create_agent(alice.user_id, "Bank")
    elsewhere = await memory.add(Scope(alice.user_id, agent.id), PIN)

    await memory.purge(alice, fact.id)
    left = await memory.list(everything, statuses=None)
    assert [f.id for f in left if "4426" in f.text] == [elsewhere.id]
    assert {f.id for f in left if f.purged} == {earlier.id, held.id, fact.id}
    assert not any(
        "4426" in repr((e.before, e.after))
        for e in await memory.events(alice.user_id)
        if e.fact_id != elsewhere.id
    )
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_a_reason_with_a_nul_character_is_kept(memory, alice):
    """PostgreSQL cannot store U+0000: a reason (a person's, or an assistant's through MCP)
    keeps U+FFFD in its place on both stores, rather than failing."""
    fact = await memory.add(alice, "I like tea")
    await memory.retract(alice, fact.id, reason="changed\x00mind")
    [_, retracted] = await memory.history(alice, fact.id)
    assert retracted.reason == "changed\ufffdmind"


async def test_purging_a_replacement_erases_what_its_predecessor_says_of_it(llm_memory, scripted_llm, alice):
    """The old fact's supersede event carries the reason too ("changed from 4426 to 7788"); a
    purge of the new fact erases it there, and reasons that quote its text in other case,
    width or spacing, or share its number."""
    old = await llm_memory.add(alice, "My bank PIN is 4426")
    scripted_llm.reply_json(extraction("My bank PIN is 7788"))
    scripted_llm.reply_json(
        {"decisions": [{"new": 1, "action": "supersede", "target": 1, "reason": "the PIN changed to 7788"}]}
    )
    await llm_memory.remember(Turn.of(alice, ("user", "New PIN: 7788."), ("assistant", "Noted.")))
    [new] = await llm_memory.list(alice)
    street = await llm_memory.add(alice, "Mój adres to Große Straße 12 w Łodzi")
    for n, reason in enumerate(
        ("MÓJ ADRES TO GROSSE STRASSE 12 W ŁODZI", "my  bank pin is 7788!", "PIN 7788 again")
    ):
        other = await llm_memory.add(alice, f"I keep note {n} in a drawer")
        await llm_memory.retract(alice, other.id, reason=reason)
    await llm_memory.purge(alice, new.id)
    await llm_memory.purge(alice, street.id)

    events = await llm_memory.events(alice.user_id)
    assert not any(("7788" in repr(e.reason)) or ("GROSSE" in repr(e.reason)) for e in events)
    assert any(e.fact_id == old.id and e.action == "supersede" and e.redacted_for == new.id for e in events)
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def test_a_memory_purged_twice_answers_the_first_erasures_receipt_and_changes_nothing(memory, alice):
    """A purge sent twice (a form posted again, a retried request) is one erasure: the second
    answers the receipt of the first, and writes no event and no receipt."""
    fact = await memory.add(alice, "My locker code is 4412")
    _, first = await memory.purge(alice, fact.id)
    events = await memory.history(alice, fact.id)
    again, receipt = await memory.purge(alice, fact.id)
    assert receipt.id == first.id and receipt.body["erased"]["facts"] == [fact.id]
    assert again.purged and await memory.history(alice, fact.id) == events
    assert [r.id for r in await memory.receipts(alice.user_id)] == [first.id]
    assert (await memory.erased_by(alice.user_id, fact.id)).id == first.id
    assert await memory.erased_by(alice.user_id, "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c") is None
