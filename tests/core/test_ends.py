"""Facts that end: a fact given an end (said by the person, or set by them) leaves recall once the
clock passes it, not the store; it is found for the time it held (as_of), shows as ended, and
clearing or moving its end brings it back in one action. Both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.domain import Action, InvalidInput, Status, Turn
from tests.helpers import decisions, extraction, texts

LISBON = "I am in Lisbon this week"


async def test_a_fact_past_its_end_leaves_recall_not_the_store(memory, alice, clock):
    said = clock.now
    trip = await memory.add(alice, LISBON, valid_to=said + timedelta(days=3))
    await memory.add(alice, "I live in Berlin")
    assert LISBON in texts(await memory.recall("where am I staying?", alice))
    assert not trip.ended(clock.now)

    clock.advance(days=4)  # the week is over
    assert LISBON not in texts(await memory.recall("where am I staying?", alice))
    assert "I live in Berlin" in texts(await memory.recall("where am I staying?", alice))
    kept = await memory.get(alice, trip.id)
    assert (kept.status, kept.valid_to, kept.version) == (Status.ACTIVE, trip.valid_to, 1)
    assert kept.ended(clock.now) and LISBON in texts(await memory.list(alice))
    # asked about the time it held, it is found
    during = await memory.recall("where was I staying?", alice, as_of=said + timedelta(days=1))
    assert LISBON in texts(during)


async def test_clearing_or_moving_the_end_brings_it_back_in_one_action(memory, alice, clock):
    trip = await memory.add(alice, LISBON, valid_to=clock.now + timedelta(days=3))
    clock.advance(days=4)
    back = await memory.update(alice, trip.id, version=1, valid_to=None)
    assert back.valid_to is None and back.version == 2 and not back.ended(clock.now)
    assert LISBON in texts(await memory.recall("where am I staying?", alice))
    moved = await memory.update(alice, trip.id, version=2, valid_to=clock.now + timedelta(days=7))
    assert moved.valid_to == clock.now + timedelta(days=7)
    # each change of the end is in the fact's history, with what it became
    history = await memory.history(alice, trip.id)
    assert [(e.action, e.reason) for e in history[1:]] == [
        (Action.EDIT, "no end"),
        (Action.EDIT, f"ends {(clock.now + timedelta(days=7)).date().isoformat()}"),
    ]
    assert (await memory.verify_audit(alice.user_id)).ok
    # leaving the end alone changes nothing; an end before the start is refused, nothing changed
    assert (await memory.update(alice, trip.id, version=3, pinned=False)).version == 3
    started = await memory.add(alice, "I train for the marathon", valid_from=clock.now)
    with pytest.raises(InvalidInput, match="valid_to must be after valid_from"):
        await memory.update(alice, started.id, valid_to=clock.now - timedelta(days=1))
    with pytest.raises(InvalidInput, match="valid_to must be after valid_from"):
        await memory.add(alice, "I am off coffee", valid_from=clock.now, valid_to=clock.now)
    assert (await memory.get(alice, started.id)).valid_to is None


async def test_the_end_the_model_reads_in_the_words_is_kept(llm_memory, scripted_llm, alice, clock):
    week_end = (clock.now + timedelta(days=5)).date().isoformat()
    scripted_llm.reply_json(
        extraction(
            {"text": LISBON, "message": 1, "valid_to": week_end},
            {"text": "I ran a marathon", "message": 1, "valid_from": "2026-03-01", "valid_to": "2026-02-01"},
            {"text": "My sister stays with us", "message": 1, "valid_to": "until Christmas"},
        )
    )
    report = await llm_memory.remember(
        Turn.of(alice, ("user", "I'm in Lisbon this week. I ran a marathon. My sister stays with us."))
    )
    facts = {f.text: f for f in await llm_memory.list(alice)}
    assert facts[LISBON].valid_to.date().isoformat() == week_end
    # an end before its start, or that is no date, is left open and said
    assert facts["I ran a marathon"].valid_to is None and facts["My sister stays with us"].valid_to is None
    assert any("valid_to not after its valid_from" in p for p in report.problems)
    assert any("unreadable valid_to 'until Christmas'" in p for p in report.problems)
    clock.advance(days=6)
    assert LISBON not in texts(await llm_memory.recall("Where am I?", alice))


async def test_an_explicit_request_reads_its_end_without_a_model(memory, alice, clock):
    said = clock.now
    await memory.remember(
        Turn.of(alice, ("user", "Please remember that my sister stays with us until Friday."))
    )
    await memory.remember(Turn.of(alice, ("user", "Merk dir, dass ich diese Woche in Lissabon bin.")))
    await memory.remember(Turn.of(alice, ("user", "Remember that I live in Berlin.")))
    # a day's number with its full stop does not cut the request short
    await memory.remember(Turn.of(alice, ("user", "Merk dir, dass das Büro bis 19. Januar geschlossen ist.")))
    ends = {f.text: f.valid_to for f in await memory.list(alice)}
    weekday = said.weekday()
    friday = (said + timedelta(days=(4 - weekday) % 7 or 7)).date()
    assert ends["My sister stays with us until Friday"].date() == friday + timedelta(days=1)
    assert ends["Ich diese Woche in Lissabon bin"].date() == (said + timedelta(days=7 - weekday)).date()
    assert ends["I live in Berlin"] is None
    closed = ends["Das Büro bis 19. Januar geschlossen ist"]
    assert (closed.month, closed.day) == (1, 20) and closed > said


async def test_said_again_with_an_end_of_its_own_the_new_end_holds(memory, alice, clock):
    first = "Remember that I am staying in Lisbon this week."
    await memory.remember(Turn.of(alice, ("user", first)))
    [fact] = await memory.list(alice)
    clock.advance(days=30)  # a month later, the same words: the same fact, its new week
    await memory.remember(Turn.of(alice, ("user", first)))
    [again] = await memory.list(alice)
    assert again.id == fact.id and again.mentions == 2 and again.valid_to > fact.valid_to + timedelta(days=25)
    assert not again.ended(clock.now) and "I am staying in Lisbon this week" in texts(
        await memory.recall("Where am I staying?", alice)
    )


async def test_said_again_after_its_end_passed_without_an_end_it_is_true_again(
    llm_memory, scripted_llm, alice, clock
):
    week_end = (clock.now + timedelta(days=5)).date().isoformat()
    scripted_llm.reply_json(extraction({"text": LISBON, "message": 1, "valid_to": week_end}))
    await llm_memory.remember(Turn.of(alice, ("user", "I'm in Lisbon this week.")))
    clock.advance(days=30)  # its end passed; then the person says it again, with no end in the words
    scripted_llm.reply_json(extraction({"text": LISBON, "message": 1}))
    report = await llm_memory.remember(Turn.of(alice, ("user", "I'm in Lisbon again, for work.")))
    [fact] = await llm_memory.list(alice)
    assert (fact.mentions, fact.valid_to) == (2, None) and not fact.ended(clock.now)
    assert [(e.action, e.reason) for e in report.events] == [
        (Action.REINFORCE, "restated"),
        (Action.EDIT, "no end"),
    ]
    assert LISBON in texts(await llm_memory.recall("Where am I?", alice))


async def test_a_person_adding_an_ended_fact_again_makes_it_true_again(memory, alice, clock):
    trip = await memory.add(alice, LISBON, valid_to=clock.now + timedelta(days=3))
    clock.advance(days=10)
    assert trip.ended(clock.now) or (await memory.get(alice, trip.id)).ended(clock.now)
    again = await memory.add(alice, LISBON)  # said again with no end, after its end passed
    assert (again.id, again.mentions, again.valid_to) == (trip.id, 2, None)
    assert LISBON in texts(await memory.recall("where am I staying?", alice))
    moved = await memory.add(alice, LISBON, valid_to=clock.now + timedelta(days=5))  # a new end
    assert moved.valid_to == clock.now + timedelta(days=5) and moved.mentions == 3
    kept = await memory.add(alice, LISBON)  # no end given, and its end is still ahead: kept
    assert kept.valid_to == moved.valid_to
    history = await memory.history(alice, trip.id)
    assert [e.reason for e in history if e.action == Action.EDIT] == [
        "no end",
        f"ends {(clock.now + timedelta(days=5)).date().isoformat()}",
    ]
    with pytest.raises(InvalidInput, match="valid_to must be after valid_from"):
        started = await memory.add(alice, "I train daily", valid_from=clock.now)
        await memory.add(alice, started.text, valid_to=clock.now - timedelta(days=1))
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_a_passing_situation_said_to_be_over_ends_rather_than_being_replaced(
    llm_memory, scripted_llm, alice, clock
):
    """ "I'm back home" ends "I'm in Lisbon this week": the Lisbon fact stays what was true until
    now, the new fact replaces nothing; a lasting change still supersedes."""
    trip = await llm_memory.add(alice, LISBON, valid_to=clock.now + timedelta(days=5))
    began = clock.now
    clock.advance(days=2)
    scripted_llm.reply_json(extraction("I am back from Lisbon"))
    scripted_llm.reply_json(decisions((1, "end", 1)))
    report = await llm_memory.remember(Turn.of(alice, ("user", "I'm back from Lisbon.")))
    assert report.problems == []
    ended = await llm_memory.get(alice, trip.id)
    assert (ended.status, ended.valid_to, ended.superseded_by) == (Status.ACTIVE, clock.now, None)
    assert ended.ended(clock.now)
    home = next(f for f in await llm_memory.list(alice) if f.text == "I am back from Lisbon")
    assert home.supersedes is None and not home.ended(clock.now)
    now = texts(await llm_memory.recall("Where am I?", alice))
    assert "I am back from Lisbon" in now and LISBON not in now
    assert LISBON in texts(await llm_memory.recall("Where am I?", alice, as_of=began + timedelta(days=1)))
    assert [e.action for e in await llm_memory.history(alice, trip.id)] == [Action.CREATE, Action.EDIT]
    assert (await llm_memory.verify_audit(alice.user_id)).ok
