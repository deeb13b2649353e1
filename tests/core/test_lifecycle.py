"""A fact's life: edit in place, retract to a tombstone, restore, purge, and the audit chain."""

from __future__ import annotations

import asyncio
import json

import pytest

from mnemo.domain import Action, Conflict, InvalidInput, NotFound, Scope, Status, Turn
from tests.helpers import bulk_add, every_row, extraction, raw_sql, texts, unrelated_facts


async def test_edit_keeps_id_and_created_date_and_history_shows_the_old_text(memory, alice, clock):
    fact = await memory.add(alice, "I work at Acme")
    clock.advance(days=2)
    edited = await memory.edit(alice, fact.id, "I work at Acme Labs", version=fact.version)

    assert edited.id == fact.id and edited.created_at == fact.created_at
    assert edited.version == 2 and edited.text == "I work at Acme Labs"
    history = await memory.history(alice, fact.id)
    assert [e.action for e in history] == [Action.CREATE, Action.EDIT]
    assert history[1].before["text"] == "I work at Acme" and history[1].after["text"] == "I work at Acme Labs"
    assert history[1].actor == "user"
    assert texts(await memory.recall("where do I work?", alice)) == ["I work at Acme Labs"]


async def test_a_stale_version_is_a_conflict_and_changes_nothing(memory, alice):
    fact = await memory.add(alice, "I work at Acme")
    await memory.edit(alice, fact.id, "I work at Acme Labs", version=1)
    with pytest.raises(Conflict):
        await memory.edit(alice, fact.id, "I work at Initech", version=1)
    assert (await memory.get(alice, fact.id)).text == "I work at Acme Labs"


async def test_empty_text_is_refused(memory, alice):
    with pytest.raises(InvalidInput):
        await memory.add(alice, "   ")
    fact = await memory.add(alice, "I work at Acme")
    with pytest.raises(InvalidInput):
        await memory.edit(alice, fact.id, "")
    assert (await memory.get(alice, fact.id)).text == "I work at Acme"


async def test_retract_leaves_a_tombstone_that_recall_skips(memory, alice):
    fact = await memory.add(alice, "I own a red kayak")
    await memory.retract(alice, fact.id, reason="sold it")

    assert texts(await memory.recall("kayak", alice)) == []
    assert texts(await memory.list(alice)) == []
    tomb = await memory.get(alice, fact.id)
    assert tomb.status == Status.RETRACTED and tomb.text == "I own a red kayak" and tomb.retired_at
    assert texts(await memory.list(alice, statuses=[Status.RETRACTED])) == ["I own a red kayak"]
    assert (await memory.history(alice, fact.id))[-1].reason == "sold it"

    await memory.restore(alice, fact.id)
    assert texts(await memory.recall("kayak", alice)) == ["I own a red kayak"]
    assert [e.action for e in await memory.history(alice, fact.id)] == [
        Action.CREATE,
        Action.RETRACT,
        Action.RESTORE,
    ]


async def test_purge_erases_the_text_everywhere_and_the_chain_still_verifies(memory, alice):
    secret = await memory.add(alice, "My bank PIN is 9182")
    await memory.edit(alice, secret.id, "My bank PIN is 9183")
    await memory.add(alice, "I like tea")
    await memory.purge(alice, secret.id)

    purged = await memory.get(alice, secret.id)
    assert purged.purged and purged.text == ""
    history = await memory.history(alice, secret.id)
    assert [e.action for e in history] == [Action.CREATE, Action.EDIT, Action.PURGE]
    # ids and hashes are hex and may contain any digits: look for the sentence itself
    assert "bank PIN" not in json.dumps([(e.before, e.after) for e in history])
    assert "bank PIN" not in await every_row(memory.store)
    assert texts(await memory.recall("bank PIN", alice)) == ["I like tea"]
    report = await memory.verify_audit(alice.user_id)
    assert report.ok, report.problems


async def test_tampering_with_a_stored_event_is_detected(memory, alice):
    fact = await memory.add(alice, "I am allergic to peanuts")
    await memory.edit(alice, fact.id, "I am allergic to peanuts and cashews")
    assert (await memory.verify_audit(alice.user_id)).ok

    await raw_sql(
        memory.store,
        "UPDATE fact_events SET after = replace(after, 'peanuts', 'nothing')"
        " WHERE seq = (SELECT min(seq) FROM fact_events)",
    )
    report = await memory.verify_audit(alice.user_id)
    assert not report.ok and any("altered" in p for p in report.problems)


async def test_a_forged_redaction_is_detected(memory, alice):
    fact = await memory.add(alice, "I am allergic to peanuts")
    await raw_sql(
        memory.store, f"UPDATE fact_events SET after = NULL, redacted = true WHERE fact_id = '{fact.id}'"
    )
    report = await memory.verify_audit(alice.user_id)
    assert not report.ok and any("no purge" in p for p in report.problems)


async def test_the_event_log_refuses_deletes(memory, alice):
    await memory.add(alice, "I am allergic to peanuts")
    with pytest.raises(Exception, match="append-only"):
        await raw_sql(memory.store, "DELETE FROM fact_events")


async def test_chains_are_per_user(memory, alice, bob):
    await memory.add(alice, "I like tea")
    await memory.add(bob, "I like coffee")
    await memory.add(alice, "I like scones")
    assert (await memory.verify_audit(alice.user_id)).events == 2
    assert (await memory.verify_audit(bob.user_id)).ok


async def test_list_as_of_shows_what_was_believed_then(memory, alice, clock):
    berlin = await memory.add(alice, "I live in Berlin")
    march = clock.now
    clock.advance(days=30)
    await memory.edit(alice, berlin.id, "I live in Berlin-Kreuzberg")
    clock.advance(days=30)
    await memory.add(alice, "I have a cat")
    await memory.retract(alice, berlin.id)

    assert texts(await memory.list(alice, as_of=march)) == ["I live in Berlin"]
    assert texts(await memory.list(alice, as_of=march.replace(day=15, month=4))) == [
        "I live in Berlin-Kreuzberg"
    ]
    assert texts(await memory.list(alice)) == ["I have a cat"]


async def test_a_purged_candidate_leaves_the_review_queue(llm_memory, scripted_llm, alice):
    from mnemo.domain import ReviewPolicy, Turn
    from tests.helpers import extraction

    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    scripted_llm.reply_json(extraction("My gym locker is number 12"))
    await llm_memory.remember(Turn.of(alice, ("user", "my gym locker is number 12")))
    candidate = (await llm_memory.list(alice, statuses=[Status.CANDIDATE]))[0]
    await llm_memory.purge(alice, candidate.id)
    assert await llm_memory.list(alice, statuses=[Status.CANDIDATE]) == []
    assert (await llm_memory.get(alice, candidate.id)).status == Status.REJECTED


async def test_nul_characters_are_dropped_from_text(memory, alice):
    fact = await memory.add(alice, "I like\x00 tea")
    assert fact.text == "I like tea"
    assert (await memory.get(alice, fact.id)).text == "I like tea"


async def test_directional_overrides_are_taken_out_of_fact_texts(llm_memory, scripted_llm, alice):
    """U+202E and its kind make a text display as something other than what it stores: every
    write path (a person's add and edit, the extractor) stores the text without them, while
    the marks right-to-left writing needs stay."""
    tricked = "I owe Bob \u202e0001\u202c dollars"
    added = await llm_memory.add(alice, tricked)
    assert added.text == "I owe Bob 0001 dollars"
    edited = await llm_memory.edit(alice, added.id, "I owe Bob \u2066100\u2069 dollars")
    assert edited.text == "I owe Bob 100 dollars"
    scripted_llm.reply_json(extraction("My name is \u202dMallory\u202c"))
    await llm_memory.remember(Turn.of(alice, ("user", "Call me Mallory."), ("assistant", "Noted.")))
    hebrew = await llm_memory.add(alice, "\u05e9\u05de\u05d9 \u200fדנה\u200f")  # RLM stays
    assert "\u200f" in hebrew.text
    for fact in await llm_memory.list(alice):
        assert not set(fact.text) & set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), fact.text


async def test_a_lone_surrogate_in_a_fact_text_is_refused(memory, alice):
    with pytest.raises(InvalidInput, match="valid Unicode"):
        await memory.add(alice, "I like \ud800 tea")
    assert await memory.list(alice, statuses=None) == []


async def test_unpin_is_logged_as_unpin_and_pinning_twice_changes_nothing(memory, alice):
    fact = await memory.add(alice, "I am allergic to peanuts")
    pinned = await memory.pin(alice, fact.id)
    again = await memory.pin(alice, fact.id)
    assert again.version == pinned.version == 2
    unpinned = await memory.pin(alice, fact.id, False)
    assert (await memory.pin(alice, fact.id, False)).version == unpinned.version == 3
    assert [e.action for e in await memory.history(alice, fact.id)] == [
        Action.CREATE,
        Action.PIN,
        Action.UNPIN,
    ]


async def test_a_deleted_agents_fact_cannot_be_made_active_again(memory, alice):
    """Deleting an agent retracts its facts and rejects its candidates; restoring or approving
    one would make a fact that no assistant recalls, so both are refused, saying why."""
    agent = await memory.accounts.create_agent(alice.user_id, "Chef")
    chef = Scope(alice.user_id, agent.id)
    fact = await memory.add(chef, "I make miso soup on Sundays")
    held = await memory.add(chef, "I own a wok", held=True)
    _, gone = await memory.delete_agent(alice.user_id, agent.id)
    assert gone == 2
    everything = Scope(alice.user_id, all_agents=True)
    assert (await memory.get(everything, held.id)).status == Status.REJECTED
    for attempt in (memory.restore(everything, fact.id), memory.restore(everything, held.id)):
        with pytest.raises(InvalidInput, match="agent that was deleted"):
            await attempt
    assert (await memory.get(everything, fact.id)).status == Status.RETRACTED


@pytest.mark.slow
async def test_deleting_an_agent_that_reads_many_default_facts_retracts_all_its_own(memory, alice):
    agent = await memory.accounts.create_agent(alice.user_id, "Chef", reads_default=True)
    own = await memory.add(Scope(alice.user_id, agent.id), "I make miso soup on Sundays")
    await bulk_add(memory, alice, unrelated_facts(600))  # newer than the agent's own, and read by it
    _, gone = await memory.delete_agent(alice.user_id, agent.id)
    assert gone == 1
    assert (await memory.get(Scope(alice.user_id, all_agents=True), own.id)).status == Status.RETRACTED


async def test_an_agent_deleted_while_facts_are_added_keeps_none_alive(memory, alice):
    """Adds racing the deletion either land before it, and are retracted with the agent's other
    facts, or find no agent: none stays active for an assistant that is gone."""
    agent = await memory.accounts.create_agent(alice.user_id, "Chef")
    chef = Scope(alice.user_id, agent.id)

    async def add(n: int):
        try:
            return await memory.add(chef, f"I cook dish number {n} on Sundays")
        except NotFound:
            return None

    *added, (_, gone) = await asyncio.gather(
        *(add(n) for n in range(15)), memory.delete_agent(alice.user_id, agent.id)
    )
    everything = Scope(alice.user_id, all_agents=True)
    alive = [
        f for f in await memory.list(everything, statuses=[Status.ACTIVE, Status.CANDIDATE]) if f.agent_id
    ]
    assert alive == []
    assert gone == len([f for f in added if f is not None])
    with pytest.raises(NotFound):
        await memory.add(chef, "I cook on Mondays")
