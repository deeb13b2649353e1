"""The "Still true?" list: facts neither said again nor recalled for their category's time are
offered, never ended by age; keeping one starts its clock again, ending or erasing it takes it
off. Both backends."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from mnemo.domain import Action, Category, InvalidInput, NotFound, RecallVia, Scope, Status
from mnemo.settings import Settings, StaleSettings
from tests.helpers import raw_sql, texts

PLAN = "I plan to learn the cello"
LIKES = "I like green tea"
NAME = "My name is Alice Moreau"
HAPPENED = "I ran the Berlin marathon in 2024"


async def _seed(memory, alice):
    await memory.add(alice, PLAN, category=Category.PLAN)
    await memory.add(alice, LIKES, category=Category.PREFERENCE)
    await memory.add(alice, NAME, category=Category.IDENTITY)
    await memory.add(alice, HAPPENED, category=Category.EVENT)


async def test_unheard_facts_are_offered_by_their_categorys_time_and_nothing_ends(memory, alice, clock):
    await _seed(memory, alice)
    assert await memory.stale(alice) == []
    clock.advance(days=91)  # a plan's 90 days
    assert texts(await memory.stale(alice)) == [PLAN]
    clock.advance(days=300)  # a preference's 365; identity and events never
    assert texts(await memory.stale(alice)) == [PLAN, LIKES]
    clock.advance(days=3650)
    assert set(texts(await memory.stale(alice))) == {PLAN, LIKES}
    # an offer changes nothing: every fact is still active, with no end, and recalled
    assert {f.status for f in await memory.list(alice)} == {Status.ACTIVE}
    assert all(f.valid_to is None for f in await memory.list(alice))
    assert PLAN in texts(await memory.recall("the cello", alice))


async def test_keeping_a_fact_starts_its_clock_again(memory, alice, clock):
    await _seed(memory, alice)
    clock.advance(days=91)
    plan = (await memory.stale(alice))[0]
    kept = await memory.keep(alice, plan.id)
    assert (kept.version, kept.mentions, kept.last_seen_at) == (2, 1, clock.now)
    assert await memory.stale(alice) == []
    history = await memory.history(alice, plan.id)
    assert (history[-1].action, history[-1].reason) == (Action.REINFORCE, "still true")
    clock.advance(days=89)
    assert await memory.stale(alice) == []
    clock.advance(days=2)
    assert texts(await memory.stale(alice)) == [PLAN]
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_saying_it_again_or_an_assistant_recalling_it_keeps_it_off(memory, alice, clock):
    await _seed(memory, alice)
    clock.advance(days=80)
    await memory.add(alice, PLAN, category=Category.PLAN)  # said again: reinforced
    clock.advance(days=20)
    assert await memory.stale(alice) == []
    await memory.recall("the cello", alice, via=RecallVia.PROXY)
    clock.advance(days=80)  # last said 100 days ago, recalled 80 days ago
    assert await memory.stale(alice) == []
    # a person looking (no assistant) is not a recall
    await memory.recall("the cello", alice)
    clock.advance(days=11)
    assert texts(await memory.stale(alice)) == [PLAN]


async def test_a_recall_counts_after_the_recall_log_forgot_it(memory, alice, clock):
    # the log keeps 30 days; the fact was recalled 60 days ago, said 100 days ago
    await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=40)
    await memory.recall("the cello", alice, via=RecallVia.MCP)
    clock.advance(days=60)
    assert memory.settings.recall_log_days == 30
    assert await memory.stale(alice) == []


async def test_turning_the_recall_log_off_forgets_when_facts_were_recalled(memory, alice, clock):
    await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=40)
    await memory.recall("the cello", alice, via=RecallVia.API)
    clock.advance(days=60)
    assert await memory.stale(alice) == []
    await memory.accounts.set_record_recalls(alice.user_id, False)
    assert texts(await memory.stale(alice)) == [PLAN]
    # and while it is off, recalls are not counted
    await memory.recall("the cello", alice, via=RecallVia.API)
    assert texts(await memory.stale(alice)) == [PLAN]


async def test_facts_with_an_end_ended_or_not_active_are_not_offered(memory, alice, clock):
    await memory.add(
        alice,
        "I am in Lisbon for the conference",
        category=Category.PLAN,
        valid_to=clock.now + timedelta(days=200),
    )
    gone = await memory.add(alice, "I plan to move to Rome", category=Category.PLAN)
    await memory.retract(alice, gone.id)
    ending = await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=100)
    assert texts(await memory.stale(alice)) == [PLAN]
    ended = await memory.update(alice, ending.id, valid_to=clock.now)  # "end now"
    assert ended.ended(clock.now) and await memory.stale(alice) == []
    with pytest.raises(InvalidInput, match="has ended"):
        await memory.keep(alice, ending.id)
    with pytest.raises(InvalidInput, match="only an active memory"):
        await memory.keep(alice, gone.id)


async def test_the_switch_turns_the_list_off_and_other_people_are_apart(memory, alice, bob, clock):
    await memory.add(alice, PLAN, category=Category.PLAN)
    await memory.add(bob, "I plan to learn the oboe", category=Category.PLAN)
    clock.advance(days=91)
    assert texts(await memory.stale(alice)) == [PLAN]
    assert texts(await memory.stale(bob)) == ["I plan to learn the oboe"]
    user = await memory.accounts.set_review_stale(alice.user_id, False)
    assert user.review_stale is False
    assert await memory.stale(alice) == []
    assert texts(await memory.stale(bob)) == ["I plan to learn the oboe"]
    await memory.accounts.set_review_stale(alice.user_id, True)
    assert texts(await memory.stale(alice)) == [PLAN]
    with pytest.raises(NotFound):
        await memory.keep(alice, (await memory.stale(bob))[0].id)


async def test_a_private_agents_facts_are_offered_only_in_its_scope(memory, alice, clock):
    diary = await memory.accounts.create_agent(alice.user_id, "diary", private=True)
    await memory.add(Scope(alice.user_id, diary.id), "I plan to write a novel", category=Category.PLAN)
    await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=91)
    assert "I plan to write a novel" in texts(await memory.stale(Scope(alice.user_id, diary.id)))
    assert texts(await memory.stale(alice)) == [PLAN]  # the default assistant does not read it
    assert len(await memory.stale(Scope(alice.user_id, all_agents=True))) == 2  # the person does


def test_every_category_has_a_time_and_the_times_are_settings(monkeypatch):
    assert set(StaleSettings.model_fields) == {c.value for c in Category}
    monkeypatch.setenv("MNEMO_STALE__PLAN", "30")
    monkeypatch.setenv("MNEMO_STALE__PREFERENCE", "0")
    chosen = Settings().stale
    assert (chosen.plan, chosen.preference, chosen.identity) == (30, 0, 0)
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert chosen.before(now) == {
        Category.RELATIONSHIP: now - timedelta(days=730),
        Category.PLAN: now - timedelta(days=30),
        Category.INSTRUCTION: now - timedelta(days=365),
        Category.OTHER: now - timedelta(days=180),
    }
    monkeypatch.setenv("MNEMO_STALE__PLAN", "-1")
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        Settings()


async def test_recalls_count_when_the_recall_log_keeps_no_days(memory, alice, clock):
    memory.settings = memory.settings.model_copy(update={"recall_log_days": 0})
    await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=80)
    await memory.recall("the cello", alice, via=RecallVia.PROXY)
    assert [r async for r in memory.recall_log(alice.user_id)] == []  # no row kept
    clock.advance(days=20)
    assert await memory.stale(alice) == []


async def test_erasing_a_fact_forgets_when_it_was_recalled(memory, alice, clock):
    fact = await memory.add(alice, PLAN, category=Category.PLAN)
    await memory.recall("the cello", alice, via=RecallVia.PROXY)
    await memory.write_recall_log()
    assert await raw_sql(memory.store, f"SELECT last_recalled_at FROM facts WHERE id = '{fact.id}'") != [
        (None,)
    ]
    await memory.purge(alice, fact.id)
    assert await raw_sql(memory.store, f"SELECT last_recalled_at FROM facts WHERE id = '{fact.id}'") == [
        (None,)
    ]


async def test_a_fact_that_begins_later_is_not_unheard_before_it_began(memory, alice, clock):
    await memory.add(
        alice, "I plan to move to Japan", category=Category.PLAN, valid_from=clock.now + timedelta(days=200)
    )
    clock.advance(days=250)
    assert await memory.stale(alice) == []  # began 50 days ago
    clock.advance(days=41)
    assert texts(await memory.stale(alice)) == ["I plan to move to Japan"]


async def test_the_longest_unheard_comes_first_counting_recalls(memory, alice, clock):
    await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=10)
    await memory.add(alice, "I plan to visit Kyoto", category=Category.PLAN)
    clock.advance(days=10)
    await memory.recall("the cello", alice, via=RecallVia.PROXY)  # heard later than Kyoto
    clock.advance(days=100)
    assert texts(await memory.stale(alice)) == ["I plan to visit Kyoto", PLAN]


async def test_keeping_twice_or_at_once_is_one_keep(memory, alice, clock):
    fact = await memory.add(alice, PLAN, category=Category.PLAN)
    clock.advance(days=100)
    kept = await asyncio.gather(*(memory.keep(alice, fact.id) for _ in range(6)))
    assert {k.version for k in kept} == {2}
    assert (await memory.keep(alice, fact.id)).version == 2
    assert [e.action for e in await memory.history(alice, fact.id)] == [Action.CREATE, Action.REINFORCE]
