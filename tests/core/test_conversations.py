"""The person's conversations: listed newest first with a count, a last time and an opening,
found by their words, by agent and by date; one read whole with its turns and what they taught.
Both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.domain import InvalidInput, NotFound, NotRemembered, Scope, Turn
from tests.helpers import worker_for


async def _said(memory, scope, conversation_id, *said: str):
    pairs = [p for text in said for p in (("user", text), ("assistant", "Noted."))]
    return await memory.submit(Turn.of(scope, *pairs, conversation_id=conversation_id))


async def _learn(memory):
    await worker_for(memory).drain()


async def test_conversations_are_listed_newest_first_with_their_opening(memory, alice, bob, clock):
    await _said(memory, alice, "c1", "Remember that I live in Lisbon", "and I like green tea")
    clock.advance(days=1)
    await _said(memory, alice, "c2", "What is the weather like?")
    await _said(memory, bob, "c3", "Remember that I live in Oslo")
    listed = await memory.conversation_list(alice.user_id)
    assert [c.id for c in listed] == ["c2", "c1"]
    first = listed[1]
    assert (first.messages, first.opening, first.agent_id) == (4, "Remember that I live in Lisbon", None)
    assert first.last_at is not None and first.created_at < listed[0].created_at
    assert [c.id for c in await memory.conversation_list(bob.user_id)] == ["c3"]
    # paging
    assert [c.id for c in await memory.conversation_list(alice.user_id, limit=1, offset=1)] == ["c1"]


async def test_conversations_are_found_by_words_agent_and_date(memory, alice, bob, clock):
    chef = await memory.accounts.create_agent(alice.user_id, "chef")
    start = clock.now
    await _said(memory, alice, "c1", "I live in Lisbon")
    clock.advance(days=2)
    await _said(memory, Scope(alice.user_id, chef.id), "c2", "I cook risotto on Sundays")
    await _said(memory, bob, "c3", "I cook risotto too")
    assert [c.id for c in await memory.conversation_list(alice.user_id, q="risotto")] == ["c2"]
    assert [c.id for c in await memory.conversation_list(alice.user_id, q="LISBON!")] == ["c1"]
    assert await memory.conversation_list(alice.user_id, q="Porto") == []
    with pytest.raises(InvalidInput, match="no words"):
        await memory.conversation_list(alice.user_id, q=" ?! ")
    assert [c.id for c in await memory.conversation_list(alice.user_id, agent=chef.id)] == ["c2"]
    assert [c.id for c in await memory.conversation_list(alice.user_id, agent=None)] == ["c1"]
    day = timedelta(days=1)
    assert [c.id for c in await memory.conversation_list(alice.user_id, since=start + day)] == ["c2"]
    assert [c.id for c in await memory.conversation_list(alice.user_id, until=start + day)] == ["c1"]


async def test_a_conversation_reads_whole_with_what_each_turn_taught(memory, alice, bob, clock):
    await _said(memory, alice, "c1", "Remember that I live in Lisbon")
    clock.advance(minutes=5)
    await _said(memory, alice, "c1", "Remember that I like green tea")
    await _learn(memory)
    seen = await memory.conversation(alice.user_id, "c1")
    assert seen.summary.messages == 4 and [m.role for m in seen.messages] == ["user", "assistant"] * 2
    assert len(seen.turns) == 2 and seen.turns[0].created_at >= seen.turns[1].created_at
    assert sorted(f.text for f in seen.memories) == ["I like green tea", "I live in Lisbon"]
    taught = {fid for t in seen.turns for ids in t.facts.values() for fid in ids}
    assert taught == {f.id for f in seen.memories}
    with pytest.raises(NotFound):
        await memory.conversation(bob.user_id, "c1")  # another person's: none
    with pytest.raises(NotFound):
        await memory.conversation(alice.user_id, "nope")


async def test_an_erased_message_gives_no_opening_and_an_erased_memory_no_text(memory, alice):
    await _said(memory, alice, "c1", "Remember that my locker code is 4412")
    await _said(memory, alice, "c1", "I like tea")
    await _learn(memory)
    seen = await memory.conversation(alice.user_id, "c1")
    locker = next(f for f in seen.memories if "4412" in f.text)
    await memory.purge(alice, locker.id)
    again = await memory.conversation(alice.user_id, "c1")
    assert "4412" not in (again.summary.opening or "")
    assert all("4412" not in m.content for m in again.messages)
    assert [f.text for f in again.memories if f.id == locker.id] == [""]
    assert await memory.conversation_list(alice.user_id, q="4412") == []


async def test_a_search_matching_more_conversations_than_a_statement_names_pages_them(memory, alice, clock):
    jobs = memory.settings.jobs.model_copy(update={"max_queued_per_user": 0})
    memory.settings = memory.settings.model_copy(update={"jobs": jobs})
    for i in range(520):  # past the 500 ids one statement names
        clock.advance(seconds=1)
        await _said(memory, alice, f"c{i:03}", f"tea number {i}")
    await _said(memory, alice, "other", "coffee")
    first = await memory.conversation_list(alice.user_id, q="tea", limit=10)
    assert [c.id for c in first] == [f"c{i:03}" for i in range(519, 509, -1)]
    last = await memory.conversation_list(alice.user_id, q="tea", limit=10, offset=515)
    assert [c.id for c in last] == ["c004", "c003", "c002", "c001", "c000"]
    assert last[0].opening == "tea number 4"


async def test_messages_carry_when_they_were_said(memory, alice, clock):
    await _said(memory, alice, "c1", "I like tea")
    seen = await memory.conversation(alice.user_id, "c1")
    assert all(m.at == clock.now for m in seen.messages)


async def test_a_new_conversation_with_an_erased_ones_id_is_not_given_its_memories(memory, alice, clock):
    await _said(memory, alice, "c1", "Remember that my favourite colour is teal")
    await _learn(memory)
    await memory.erase_conversation(alice.user_id, "c1", with_facts=False)  # the memory stays
    clock.advance(hours=1)
    await _said(memory, alice, "c1", "What is the weather like?")
    assert (await memory.conversation(alice.user_id, "c1")).memories == ()


async def test_a_search_with_no_word_is_refused(memory, alice):
    await _said(memory, alice, "c1", "I like tea 😀")
    for nothing in ("%", "😀", '"', "?!"):
        with pytest.raises(InvalidInput, match="no words"):
            await memory.conversation_list(alice.user_id, q=nothing)


async def test_a_conversation_not_remembered_stores_nothing_of_its_later_turns(memory, alice, bob):
    await _said(memory, alice, "c1", "Remember that I like tea")
    off = await memory.remember_conversation(alice, "c1", False)
    assert (off.id, off.remember, off.messages) == ("c1", False, 2)
    with pytest.raises(NotRemembered):
        await _said(memory, alice, "c1", "Remember that my locker code is 4412")
    seen = await memory.conversation(alice.user_id, "c1")
    assert [m.content for m in seen.messages] == ["Remember that I like tea", "Noted."]  # what it held stays
    assert not any("4412" in str(j) for j in await memory.jobs(alice.user_id))
    # before its first turn, and only for its person: bob's c1 is his own
    await memory.remember_conversation(alice, "fresh", False)
    with pytest.raises(NotRemembered):
        await _said(memory, alice, "fresh", "I like coffee")
    assert (await memory.conversation(alice.user_id, "fresh")).summary.messages == 0
    await _said(memory, bob, "c1", "I like cocoa")
    assert (await memory.conversation(bob.user_id, "c1")).summary.remember is True
    # on again: stored and learnt from
    assert (await memory.remember_conversation(alice, "c1", True)).remember is True
    await _said(memory, alice, "c1", "Remember that I like rooibos")
    assert (await memory.conversation(alice.user_id, "c1")).summary.messages == 4


async def test_backfill_leaves_a_conversation_not_remembered_alone(memory, alice):
    await _said(memory, alice, "c1", "Remember that I like tea")
    await _said(memory, alice, "c2", "Remember that I like coffee")
    await memory.remember_conversation(alice, "c2", False)
    refs = await memory.store.conversations_since(alice.user_id, None)
    assert [r.id for r in refs] == ["c1"]


async def test_erasing_a_conversation_not_remembered_keeps_its_switch(memory, alice):
    await _said(memory, alice, "c1", "I like tea")
    await memory.remember_conversation(alice, "c1", False)
    await memory.erase_conversation(alice.user_id, "c1", with_facts=False)
    seen = await memory.conversation(alice.user_id, "c1")
    assert (seen.summary.remember, seen.summary.messages) == (False, 0)
    with pytest.raises(NotRemembered):
        await _said(memory, alice, "c1", "My PIN is 4412")
    # erasing everything forgets switches too
    await memory.erase_everything(alice.user_id)
    assert await memory.conversation_list(alice.user_id) == []
