"""Backfill: learning from stored conversations, exactly once, with actor `backfill`; and taking it back."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from mnemo.batch.backfill import ACTOR, RUN_KEY, NoModel
from mnemo.domain import Action, BackfillMark, Conflict, Message, ReviewPolicy, Scope, Status
from mnemo.memory import Memory
from tests.fakes.learner import Learner
from tests.helpers import backfill_for, texts

CELLO, ANA, PEANUTS = "I play the cello", "My sister Ana lives in Porto", "I am allergic to peanuts"
LYON, TRACTOR = "I grew up in Lyon", "I drive a green tractor"
EVERYTHING = (Status.ACTIVE, Status.CANDIDATE, Status.RETRACTED, Status.REJECTED, Status.SUPERSEDED)


async def said(
    memory: Memory, scope: Scope, conversation: str, days_ago: float, *users: str
) -> list[Message]:
    """Store one conversation: each user message and a reply, a minute apart, `days_ago` days back."""
    at = memory.clock() - timedelta(days=days_ago)
    saved = []
    for i, text in enumerate(users):
        pair = [Message("user", text), Message("assistant", "Noted.")]
        saved += await memory.store.save_messages(scope, conversation, pair, at + timedelta(minutes=i))
    return saved


@pytest.fixture
def learner(scripted_llm) -> Learner:
    scripted_llm.responder = learner = Learner()
    return learner


@pytest.fixture
async def people(llm_memory):
    """alice: c1 (3 days ago, two turns), c2 (2 days ago), c3 (10 days ago); bob: c4 (yesterday)."""
    alice = Scope((await llm_memory.accounts.user("alice")).id)
    bob = Scope((await llm_memory.accounts.user("bob")).id)
    await said(llm_memory, alice, "c1", 3, CELLO, ANA)
    await said(llm_memory, alice, "c2", 2, PEANUTS)
    await said(llm_memory, alice, "c3", 10, LYON)
    await said(llm_memory, bob, "c4", 1, TRACTOR)
    return alice, bob


async def backfill(memory: Memory, *, apply: bool = True, resume: bool = False, **options):
    job = backfill_for(memory, stop_requested=options.pop("stop", lambda: False))
    run = await job.interrupted_run() if resume else await job.new_run(**options)
    return await job.run(run, apply=apply)


def user(report, name: str):
    return next(u for u in report.users if u.user == name)


async def facts(memory: Memory, scope: Scope) -> list:
    return await memory.list(Scope(scope.user_id, all_agents=True), statuses=EVERYTHING, limit=1000)


async def test_a_dry_run_reports_what_would_change_and_writes_nothing(llm_memory, people, learner):
    report = await backfill(llm_memory, apply=False)

    a = user(report, "alice")
    assert (a.conversations, a.learnt, a.turns, a.counts["create"]) == (2, 2, 3, 3)
    assert set(a.samples) == {CELLO, ANA, PEANUTS}
    assert user(report, "bob").counts["create"] == 1
    assert report.to_json()["totals"]["create"] == 4 and report.to_json()["mode"] == "dry-run"
    assert learner.extracted == Counter({CELLO: 1, ANA: 1, PEANUTS: 1, TRACTOR: 1})
    # nothing written: no fact, no event, no progress, no run record
    for scope in people:
        assert await facts(llm_memory, scope) == [] and await llm_memory.events(scope.user_id) == []
        assert await llm_memory.store.backfill_marks(scope.user_id, ["c1", "c2", "c3", "c4"]) == []
    assert await llm_memory.store.get_setting(RUN_KEY) is None


async def test_apply_learns_once_with_actor_backfill_and_the_source_message(llm_memory, people, learner):
    alice, bob = people
    report = await backfill(llm_memory)
    assert user(report, "alice").counts["create"] == 3 and report.stopped is None

    learnt = await facts(llm_memory, alice)
    assert sorted(texts(learnt)) == sorted([CELLO, ANA, PEANUTS])
    for fact in learnt:
        source = await llm_memory.messages(
            alice.user_id, fact.source.conversation_id, fact.source.message_ids
        )
        assert [(m.role, m.content) for m in source] == [("user", fact.text)]
        events = await llm_memory.history(alice, fact.id)
        assert [(e.action, e.actor) for e in events] == [(Action.CREATE, ACTOR)]
    assert texts(await facts(llm_memory, bob)) == [TRACTOR]
    marks = await llm_memory.store.backfill_marks(alice.user_id, ["c1", "c2", "c3"])
    openers = {
        m.id for c in ("c1", "c2") for m in await llm_memory.messages(alice.user_id, c) if m.role == "user"
    }
    assert {m.turn_id for m in marks} == openers and {m.run_id for m in marks} == {report.run.id}

    again = await backfill(llm_memory)
    a = user(again, "alice")
    assert (a.turns, a.learnt, a.done_before, sum(a.counts.values())) == (0, 0, 2, 0)
    assert learner.extracted == Counter({CELLO: 1, ANA: 1, PEANUTS: 1, TRACTOR: 1})
    assert len(await facts(llm_memory, alice)) == 3


async def test_a_new_turn_in_a_learnt_conversation_is_learnt_alone(llm_memory, people, learner):
    alice, _ = people
    await backfill(llm_memory)
    await said(llm_memory, alice, "c1", 1, "I collect stamps")
    report = await backfill(llm_memory, users=["alice"])
    assert user(report, "alice").turns == 1
    assert learner.extracted["I collect stamps"] == 1 and learner.extracted[CELLO] == 1


async def test_force_learns_again_and_restated_facts_are_reinforced(llm_memory, people, learner):
    alice, _ = people
    await backfill(llm_memory)
    report = await backfill(llm_memory, force=True)
    a = user(report, "alice")
    assert a.turns == 3 and a.counts["reinforce"] == 3 and a.counts["create"] == 0
    assert learner.extracted == Counter({CELLO: 2, ANA: 2, PEANUTS: 2, TRACTOR: 2})
    assert all(f.mentions == 2 for f in await facts(llm_memory, alice))


async def test_the_lookback_window_is_by_message_time(llm_memory, people, learner):
    alice, _ = people
    # a conversation that started before the window and went on inside it
    await said(llm_memory, alice, "c5", 9, "I once lived in Oslo")
    await said(llm_memory, alice, "c5", 1, "I work as a nurse")
    report = await backfill(llm_memory, users=["alice"])
    assert LYON not in texts(await facts(llm_memory, alice))
    assert "I once lived in Oslo" not in learner.extracted and learner.extracted["I work as a nurse"] == 1
    assert user(report, "alice").conversations == 3

    wider = await backfill(llm_memory, users=["alice"], lookback_days=30)
    assert user(wider, "alice").turns == 2  # c3, and c5's older turn: marks are per turn
    assert LYON in texts(await facts(llm_memory, alice))


async def test_users_chooses_whose_conversations(llm_memory, people, learner):
    alice, bob = people
    report = await backfill(llm_memory, users=["bob"])
    assert [u.user for u in report.users] == ["bob"]
    assert await facts(llm_memory, alice) == [] and texts(await facts(llm_memory, bob)) == [TRACTOR]
    with pytest.raises(Exception, match="no user named 'carol'"):
        await backfill(llm_memory, users=["carol"])


async def test_the_switch_and_the_review_policy_hold(llm_memory, people, learner):
    alice, bob = people
    await llm_memory.accounts.set_user_switch(bob.user_id, False)
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    report = await backfill(llm_memory)
    assert user(report, "bob").skipped and TRACTOR not in learner.extracted
    assert await facts(llm_memory, bob) == []
    assert user(report, "alice").counts["held"] == 3
    assert {f.status for f in await facts(llm_memory, alice)} == {Status.CANDIDATE}


async def test_without_a_chat_model_it_refuses(memory, alice):
    job = backfill_for(memory)
    with pytest.raises(NoModel, match="chat model"):
        await job.run(await job.new_run(), apply=True)


async def test_delete_retracts_only_what_backfill_made(llm_memory, people, learner):
    alice, _ = people
    mine = await llm_memory.add(alice, "I am left-handed")
    await backfill(llm_memory, lookback_days=30)
    edited = next(f for f in await facts(llm_memory, alice) if f.text == PEANUTS)
    await llm_memory.edit(alice, edited.id, "I am allergic to peanuts and cashews")
    job = backfill_for(llm_memory)

    dry = await job.delete(["alice"], None, apply=False)
    assert dry.users[0]["retracted"] == 3 and dry.users[0]["kept_edited"] == 1
    assert {f.status for f in await facts(llm_memory, alice)} == {Status.ACTIVE}

    # within a window: only what was learnt from messages of the last 5 days (not Lyon, 10 days ago)
    recent = await job.delete(["alice"], llm_memory.clock() - timedelta(days=5), apply=True)
    assert recent.users[0]["retracted"] == 2
    by_text = {f.text: f for f in await facts(llm_memory, alice)}
    assert by_text[LYON].status == Status.ACTIVE
    assert by_text[CELLO].status == Status.RETRACTED and by_text[ANA].status == Status.RETRACTED
    assert by_text["I am left-handed"].status == Status.ACTIVE  # a person's own fact
    assert by_text["I am allergic to peanuts and cashews"].status == Status.ACTIVE  # edited since
    history = await llm_memory.history(alice, by_text[CELLO].id)
    assert history[-1].action == Action.RETRACT and "backfill --delete" in history[-1].reason
    assert not by_text[CELLO].purged and mine.id in by_text["I am left-handed"].id

    everything = await job.delete(["alice"], None, apply=True)
    assert everything.users[0]["retracted"] == 1
    assert (await llm_memory.get(alice, by_text[LYON].id)).status == Status.RETRACTED
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def test_delete_rejects_what_backfill_held_for_review(llm_memory, people, learner):
    alice, _ = people
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    await backfill(llm_memory, users=["alice"])
    report = await backfill_for(llm_memory).delete(["alice"], None, apply=True)
    assert report.users[0]["rejected"] == 3
    assert {f.status for f in await facts(llm_memory, alice)} == {Status.REJECTED}


async def test_a_model_failure_stops_the_run_and_resume_finishes_it(llm_memory, people, learner):
    alice, _ = people
    learner.fail_on.add(PEANUTS)
    report = await backfill(llm_memory)
    assert report.stopped is not None and report.stopped.conversation_id == "c2"
    assert not report.stopped.interrupted
    assert sorted(texts(await facts(llm_memory, alice))) == sorted([CELLO, ANA])

    learner.fail_on.clear()
    resumed = await backfill(llm_memory, resume=True)
    assert resumed.run.id == report.run.id and resumed.stopped is None
    assert learner.extracted == Counter({CELLO: 1, ANA: 1, PEANUTS: 1, TRACTOR: 1})
    with pytest.raises(Exception, match="no interrupted backfill"):
        await backfill(llm_memory, resume=True)


async def test_a_crash_mid_turn_then_resume_learns_every_turn_exactly_once(llm_memory, people, learner):
    """The third turn's commit dies (as a killed process would): its facts and its mark are
    not written; resume learns it again and everything else exactly once."""
    alice, _ = people
    store = llm_memory.store
    commit, calls = store.commit, []

    async def dying(*args, **kw):
        calls.append(kw.get("mark"))
        if len(calls) == 3:
            raise RuntimeError("killed")
        return await commit(*args, **kw)

    store.commit = dying
    with pytest.raises(RuntimeError, match="killed"):
        await backfill(llm_memory, force=True)
    store.commit = commit
    assert calls[2].conversation_id == "c2"
    assert sorted(texts(await facts(llm_memory, alice))) == sorted([CELLO, ANA])

    report = await backfill(llm_memory, resume=True)
    assert report.run.force and report.stopped is None
    # the dying turn was asked twice (its first answer was never written); every other once
    assert learner.extracted == Counter({CELLO: 1, ANA: 1, PEANUTS: 2, TRACTOR: 1})
    for scope in people:
        made = Counter(f.source.message_ids for f in await facts(llm_memory, scope))
        assert made and set(made.values()) == {1}
    assert (await backfill(llm_memory, resume=False)).to_json()["totals"]["turns"] == 0


async def test_ctrl_c_finishes_the_turn_in_hand_then_resume_goes_on(llm_memory, people, learner):
    alice, _ = people
    report = await backfill(llm_memory, stop=lambda: len(learner.extracted) >= 2)
    assert report.stopped.interrupted and report.stopped.conversation_id == "c1"
    assert sorted(texts(await facts(llm_memory, alice))) == sorted([CELLO, ANA])
    resumed = await backfill(llm_memory, resume=True)
    assert resumed.to_json()["totals"]["turns"] == 2
    assert learner.extracted == Counter({CELLO: 1, ANA: 1, PEANUTS: 1, TRACTOR: 1})


async def test_a_mark_is_written_only_over_the_one_that_was_read(llm_memory, people, learner):
    """Two runs at once cannot both learn a turn: the second one's commit finds the mark changed."""
    alice, _ = people
    await backfill(llm_memory, users=["alice"])
    (mark,) = await llm_memory.store.backfill_marks(alice.user_id, ["c2"])
    again = BackfillMark("c2", mark.turn_id, "r2", mark.said_at, replaces=None)
    with pytest.raises(Conflict):
        await llm_memory.store.commit(alice.user_id, [], llm_memory.clock(), mark=again)
    stale = BackfillMark("c2", mark.turn_id, "r2", mark.said_at, replaces="another-run")
    with pytest.raises(Conflict):
        await llm_memory.store.commit(alice.user_id, [], llm_memory.clock(), mark=stale)
    over = BackfillMark("c2", mark.turn_id, "r2", mark.said_at, replaces=mark.run_id)
    await llm_memory.store.commit(alice.user_id, [], llm_memory.clock(), mark=over)
    assert [m.run_id for m in await llm_memory.store.backfill_marks(alice.user_id, ["c2"])] == ["r2"]


async def test_automation_turns_and_other_users_messages_are_never_read(llm_memory, people, learner):
    alice, bob = people
    await llm_memory.store.enqueue_turn(
        alice, "c9", [Message("user", "I am the admin")], llm_memory.clock(), automation=True
    )
    assert await llm_memory.store.timed_messages(bob.user_id, ["c1", "c9"]) == {}
    await backfill(llm_memory, users=["alice"])
    assert "I am the admin" not in learner.extracted
    users = await llm_memory.store.users_with_conversations()
    assert [u.name for u in users] == ["alice", "bob"]
