"""Undo takes back a memory's last change while it is still the last: a correction, an end, a
retraction; anything else, or a memory changed since, is left as it is. Both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.domain import Action, Category, Conflict, InvalidInput, NotFound, Status


async def test_a_correction_an_end_and_a_retraction_are_taken_back(memory, alice, clock):
    fact = await memory.add(alice, "I live in Lisbon", category=Category.IDENTITY)
    edited = await memory.update(alice, fact.id, version=1, text="I live in Porto", category=Category.OTHER)
    back = await memory.undo(alice, fact.id, edited.version)
    assert (back.text, back.category, back.version) == ("I live in Lisbon", Category.IDENTITY, 3)
    ended = await memory.update(alice, fact.id, version=3, valid_to=clock.now + timedelta(days=2))
    assert (await memory.undo(alice, fact.id, ended.version)).valid_to is None
    gone = await memory.retract(alice, fact.id)
    assert (await memory.undo(alice, fact.id, gone.version)).status == Status.ACTIVE
    history = await memory.history(alice, fact.id)
    assert [e.action for e in history] == [Action.CREATE, *[Action.EDIT] * 4, Action.RETRACT, Action.RESTORE]
    assert [e.reason for e in history if e.reason == "undone"] == ["undone"] * 3  # the restore too
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_a_memory_changed_since_or_another_kind_of_change_is_left_alone(memory, alice, bob):
    fact = await memory.add(alice, "I live in Lisbon")
    edited = await memory.update(alice, fact.id, version=1, text="I live in Porto")
    await memory.update(alice, fact.id, version=edited.version, category=Category.IDENTITY)
    with pytest.raises(Conflict):
        await memory.undo(alice, fact.id, edited.version)
    pinned = await memory.pin(alice, fact.id)
    with pytest.raises(InvalidInput, match="not one to undo"):
        await memory.undo(alice, fact.id, pinned.version)
    with pytest.raises(NotFound):
        await memory.undo(bob, fact.id, pinned.version)
    assert (await memory.get(alice, fact.id)).text == "I live in Porto"


async def test_undoing_a_retraction_keeps_the_end_and_an_undo_is_not_undone(memory, alice, clock):
    fact = await memory.add(alice, "I am in Lisbon this week", valid_to=clock.now + timedelta(days=3))
    gone = await memory.retract(alice, fact.id)
    back = await memory.undo(alice, fact.id, gone.version)
    assert (back.status, back.valid_to) == (Status.ACTIVE, fact.valid_to)
    edited = await memory.update(alice, fact.id, version=back.version, text="I am in Porto this week")
    undone = await memory.undo(alice, fact.id, edited.version)
    assert undone.text == "I am in Lisbon this week"
    with pytest.raises(InvalidInput, match="not one to undo"):  # an undo is not itself undone
        await memory.undo(alice, fact.id, undone.version)
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_an_approval_is_taken_back_and_what_it_replaced_comes_back(
    llm_memory, scripted_llm, alice, clock
):
    from mnemo.domain import Turn
    from tests.helpers import decisions, extraction

    until = clock.now + timedelta(days=400)
    old = await llm_memory.add(alice, "My name is Alice Moreau", pinned=True, valid_to=until)
    scripted_llm.reply_json(extraction("My name is Alice Dubois"))
    scripted_llm.reply_json(decisions((1, "supersede", 1)))
    await llm_memory.remember(
        Turn.of(alice, ("user", "My name is now Alice Dubois."), ("assistant", "Noted."))
    )
    [candidate] = await llm_memory.list(alice, statuses=[Status.CANDIDATE])
    approved = await llm_memory.approve(alice, candidate.id)
    assert (await llm_memory.get(alice, old.id)).status == Status.SUPERSEDED

    back = await llm_memory.undo(alice, candidate.id, approved.version)
    assert back.status == Status.CANDIDATE and back.supersedes == old.id
    assert back.recorded_at == candidate.recorded_at  # recorded as it was before the approval
    restored = await llm_memory.get(alice, old.id)
    assert (restored.status, restored.superseded_by, restored.pinned) == (Status.ACTIVE, None, True)
    assert restored.valid_to == until  # with the end it had before it was replaced
    assert [f.id for f in await llm_memory.list(alice, statuses=[Status.CANDIDATE])] == [candidate.id]
    assert "Dubois" not in str([f.text for f in await llm_memory.recall("my name", alice)])
    history = await llm_memory.history(alice, candidate.id)
    assert (history[-1].action, history[-1].reason) == (Action.UNAPPROVE, "undone")
    with pytest.raises(InvalidInput, match="not one to undo"):  # an undo is not undone
        await llm_memory.undo(alice, candidate.id, back.version)
    # approved again, it replaces the old fact again
    await llm_memory.approve(alice, candidate.id)
    assert (await llm_memory.get(alice, old.id)).status == Status.SUPERSEDED
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def test_a_change_of_text_and_end_at_once_is_taken_back_whole(memory, alice, clock):
    fact = await memory.add(alice, "I am in Lisbon this week")
    both = await memory.update(
        alice, fact.id, version=1, text="I am in Porto this week", valid_to=clock.now + timedelta(days=5)
    )
    assert len(await memory.history(alice, fact.id)) == 3  # an end and an edit, one request
    back = await memory.undo(alice, fact.id, both.version)
    assert (back.text, back.valid_to) == ("I am in Lisbon this week", None)
