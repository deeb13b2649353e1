"""A fact said again is one fact, reinforced: whatever the timing, the path or the review policy.

The store checks, inside the transaction that every writer of a user waits for, that no
agent holds two facts with the same text and status (active, or awaiting review); a write
that lost that race reads again and reinforces.
"""

from __future__ import annotations

import asyncio

import pytest

from mnemo.domain import Action, Duplicate, Message, ReviewPolicy, Scope, Status, Turn
from tests.helpers import decisions, extraction, texts


def turn(scope: Scope, said: str) -> Turn:
    return Turn.of(scope, ("user", said), ("assistant", "Noted."))


async def test_identical_adds_at_once_make_one_fact(memory, alice):
    added = await asyncio.gather(*(memory.add(alice, "I drink coffee every morning") for _ in range(20)))
    [fact] = await memory.list(Scope(alice.user_id, all_agents=True), statuses=None)
    assert fact.mentions == 20 and fact.status == Status.ACTIVE
    assert {f.id for f in added} == {fact.id}
    actions = [e.action for e in await memory.history(alice, fact.id)]
    assert actions == [Action.CREATE] + [Action.REINFORCE] * 19
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_identical_held_adds_at_once_make_one_candidate(memory, alice):
    await asyncio.gather(*(memory.add(alice, "I am afraid of heights", held=True) for _ in range(10)))
    [candidate] = await memory.list(Scope(alice.user_id, all_agents=True), statuses=None)
    assert candidate.status == Status.CANDIDATE and candidate.mentions == 10


async def test_a_turn_that_lost_the_race_to_an_add_reinforces_instead(llm_memory, scripted_llm, alice):
    """The extractor planned a new fact; before it committed, the person added the same text."""
    store = llm_memory.store
    commit = store.commit

    async def add_first(user_id, changes, at, **kw):
        if any(c.action == Action.CREATE and c.actor == "extractor" for c in changes):
            store.commit = commit  # once
            await llm_memory.add(alice, "I have a cat named Miso")
        return await commit(user_id, changes, at, **kw)

    store.commit = add_first
    scripted_llm.reply_json(extraction("I have a cat named Miso"))
    scripted_llm.reply_json(extraction("I have a cat named Miso"))  # the turn is planned again
    report = await llm_memory.remember(turn(alice, "My cat is called Miso."))
    [fact] = await llm_memory.list(alice, statuses=None)
    assert fact.mentions == 2 and [e.action for e in report.events] == [Action.REINFORCE]


async def test_under_review_a_restated_candidate_is_reinforced(llm_memory, scripted_llm, alice):
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    for _ in range(2):
        scripted_llm.reply_json(extraction("I have a cat named Miso"))
        await llm_memory.remember(turn(alice, "My cat is called Miso."))
    [candidate] = await llm_memory.list(alice, statuses=None)
    assert candidate.status == Status.CANDIDATE and candidate.mentions == 2


async def test_approving_a_candidate_whose_text_is_active_reinforces_that_fact(memory, alice):
    held = await memory.add(alice, "I have a cat named Miso", held=True)
    active = await memory.add(alice, "I have a cat named Miso")  # said again, meanwhile, as active
    assert active.id != held.id
    approved = await memory.approve(alice, held.id)
    assert approved.id == active.id and approved.mentions == 2
    [fact] = await memory.list(alice)
    assert fact.id == active.id
    closed = await memory.get(alice, held.id)
    assert closed.status == Status.SUPERSEDED and closed.superseded_by == active.id
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_a_restore_that_would_make_a_text_active_twice_is_refused(memory, alice):
    first = await memory.add(alice, "I live in Lisbon")
    await memory.retract(alice, first.id)
    again = await memory.add(alice, "I live in Lisbon")
    with pytest.raises(Duplicate, match=again.id):
        await memory.restore(alice, first.id)
    assert [f.id for f in await memory.list(alice)] == [again.id]


async def test_backfill_forced_twice_under_review_holds_one_candidate(llm_memory, scripted_llm, alice):
    """The same turn learnt twice (backfill --force) under review: one candidate, reinforced."""
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    said = [Message("user", "I moved to Porto."), Message("assistant", "Nice.")]
    messages = await llm_memory.store.save_messages(alice, "c1", said, llm_memory.clock())
    for _ in range(2):
        scripted_llm.reply_json(extraction("I live in Porto"))
        await llm_memory.writer.learn(alice, messages, "c1", llm_memory.clock(), None, actor="backfill")
    assert [(f.text, f.mentions) for f in await llm_memory.list(alice, statuses=None)] == [
        ("I live in Porto", 2)
    ]


async def test_an_edited_candidate_no_longer_replaces_an_unrelated_fact(llm_memory, scripted_llm, alice):
    """Proposed as "I live in Madrid" to replace "I live in Lisbon", then edited into something
    else: approving it leaves Lisbon alone. Edited into a closer wording, it still replaces it."""
    await llm_memory.add(alice, "I live in Lisbon")
    await llm_memory.add(alice, "I work as a nurse")
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    for said in ("I live in Madrid", "I work as a teacher"):
        scripted_llm.reply_json(extraction(said))
        scripted_llm.reply_json(decisions((1, "supersede", 1)))
        await llm_memory.remember(turn(alice, said + "."))
    held = {f.text: f for f in await llm_memory.list(alice, statuses=[Status.CANDIDATE])}
    assert all(f.supersedes for f in held.values())

    unrelated = await llm_memory.edit(alice, held["I live in Madrid"].id, "I have a cat named Miso")
    assert unrelated.supersedes is None
    [event] = [e for e in await llm_memory.history(alice, unrelated.id) if e.action == Action.EDIT]
    assert "no longer replaces" in event.reason
    await llm_memory.approve(alice, unrelated.id)

    closer = await llm_memory.edit(
        alice, held["I work as a teacher"].id, "I work as a primary school teacher"
    )
    assert closer.supersedes == held["I work as a teacher"].supersedes
    await llm_memory.approve(alice, closer.id)

    assert sorted(texts(await llm_memory.list(alice))) == [
        "I have a cat named Miso",
        "I live in Lisbon",
        "I work as a primary school teacher",
    ]
