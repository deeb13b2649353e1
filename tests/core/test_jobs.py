"""The durable queue: every stored turn is learnt from exactly once, whatever fails."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from mnemo.batch.jobs import Worker
from mnemo.domain import Action, Claim, JobStatus, QueueFull, Scope, Turn
from tests.helpers import extraction, texts, worker_for


def turn(scope: Scope, said: str, **kw) -> Turn:
    return Turn.of(scope, ("user", said), ("assistant", "Noted."), **kw)


def worker(memory, clock, **kw) -> Worker:
    kw.setdefault("backoff", timedelta(seconds=10))
    return worker_for(memory, clock=clock, **kw)


async def test_a_submitted_turn_is_learnt_once(memory, alice, clock):
    job = await memory.submit(turn(alice, "Remember that I live in Lisbon", conversation_id="c1"))
    assert job.status == JobStatus.PENDING
    w = worker(memory, clock)
    assert await w.drain() == 1
    assert await w.drain() == 0
    done = await memory.job(alice.user_id, job.id)
    # without a chat model only the explicit request is learnt: the turn waits for a model
    assert done.status == JobStatus.WAITING and done.result["events"] == 1
    assert texts(await memory.list(alice)) == ["I live in Lisbon"]
    fact = (await memory.list(alice))[0]
    assert fact.source.conversation_id == "c1" and fact.source.message_ids[0] in job.message_ids


async def test_nothing_is_queued_when_memory_is_off_or_for_automation(memory, alice):
    assert await memory.submit(turn(alice, "Remember that I am root", automation=True)) is None
    await memory.accounts.set_user_switch(alice.user_id, False)
    assert await memory.submit(turn(alice, "Remember that I live in Lisbon")) is None
    assert await memory.jobs(alice.user_id) == []


async def test_a_queued_turn_wakes_the_worker_at_once(core, alice, clock):
    """Memory.submit wakes the worker of its core: a job is learnt long before the next poll."""
    w = core.worker(clock=clock, poll=600.0)
    stop = asyncio.Event()
    running = asyncio.create_task(w.run(stop))
    await asyncio.sleep(0.1)  # it found nothing, and waits for the next poll or a wake
    job = await core.memory.submit(turn(alice, "Remember that I live in Lisbon"))
    try:
        async with asyncio.timeout(30):
            while (await core.memory.job(alice.user_id, job.id)).status != JobStatus.WAITING:
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await running
    assert texts(await core.memory.list(alice)) == ["I live in Lisbon"]


async def test_a_turn_not_queued_wakes_no_one(memory, alice):
    woken: list[str] = []
    memory.on_queued(lambda: woken.append("woken"))
    await memory.submit(turn(alice, "Remember that I am root", automation=True))
    assert woken == []
    await memory.submit(turn(alice, "Remember that I live in Lisbon"))
    assert woken == ["woken"]


async def test_switching_memory_off_before_the_worker_runs_writes_nothing(memory, alice, clock):
    job = await memory.submit(turn(alice, "Remember that I live in Lisbon"))
    await memory.accounts.set_user_switch(alice.user_id, False)
    await worker(memory, clock).drain()
    assert (await memory.job(alice.user_id, job.id)).result["skipped"]
    skipped = await memory.turn(alice.user_id, job.id)
    assert (skipped.state, skipped.reason, skipped.facts["created"]) == ("skipped", "memory_off", [])
    assert await memory.list(alice) == []


async def test_an_unavailable_model_is_retried_with_backoff_then_succeeds(
    llm_memory, scripted_llm, alice, clock
):
    job = await llm_memory.submit(turn(alice, "I have a cat named Miso."))
    scripted_llm.fail(503, "overloaded")
    w = worker(llm_memory, clock)
    await w.drain()
    waiting = await llm_memory.job(alice.user_id, job.id)
    assert waiting.status == JobStatus.PENDING and waiting.attempts == 1
    assert "overloaded" in waiting.last_error
    assert waiting.next_attempt_at == clock.now + timedelta(seconds=10)
    assert await w.drain() == 0  # not due yet
    clock.advance(seconds=11)
    scripted_llm.reply_json(extraction("I have a cat named Miso"))
    await w.drain()
    assert (await llm_memory.job(alice.user_id, job.id)).status == JobStatus.DONE
    assert texts(await llm_memory.list(alice)) == ["I have a cat named Miso"]


async def test_a_job_that_keeps_failing_is_parked_with_its_reason(llm_memory, scripted_llm, alice, clock):
    job = await llm_memory.submit(turn(alice, "I have a cat named Miso."))
    scripted_llm.fail(503, "overloaded", times=10)
    w = worker(llm_memory, clock, max_attempts=3)
    for _ in range(3):
        await w.drain()
        clock.advance(minutes=5)
    parked = await llm_memory.job(alice.user_id, job.id)
    assert parked.status == JobStatus.FAILED and parked.attempts == 3
    assert "overloaded" in parked.last_error
    assert await w.drain() == 0


async def test_a_crashed_workers_job_is_claimed_again_after_its_lease(memory, alice, clock):
    job = await memory.submit(turn(alice, "Remember that I live in Lisbon"))
    dead = await memory.store.claim_job("dead-worker", clock.now, timedelta(seconds=30))
    assert dead.id == job.id
    w = worker(memory, clock)
    assert await w.drain() == 0  # still leased to the dead worker
    clock.advance(seconds=31)
    assert await w.drain() == 1
    assert texts(await memory.list(alice)) == ["I live in Lisbon"]
    # the dead worker waking up cannot finish it a second time
    report = await memory.writer.learn(
        alice,
        await memory.store.job_messages(job),
        job.conversation_id,
        job.turn_at,
        None,
        claim=Claim(job.id, "dead-worker"),
    )
    assert report.retry and report.events == []
    assert texts(await memory.list(alice)) == ["I live in Lisbon"]
    history = await memory.history(alice, (await memory.list(alice))[0].id)
    assert [e.action for e in history] == [Action.CREATE]


async def test_two_workers_share_the_queue_without_doubles(memory, alice, clock):
    for i in range(12):
        await memory.submit(turn(alice, f"Remember that my locker number {i} is blue"))
    a, b = worker(memory, clock, name="a"), worker(memory, clock, name="b")
    done = await asyncio.gather(a.drain(), b.drain())
    assert sum(done) == 12
    assert len(await memory.list(alice, limit=100)) == 12
    assert all(j.status == JobStatus.WAITING for j in await memory.jobs(alice.user_id))


async def test_one_persons_turns_are_claimed_one_at_a_time_in_the_order_they_came(memory, alice, bob, clock):
    first = await memory.submit(turn(alice, "Remember that I live in Lisbon"))
    second = await memory.submit(turn(alice, "Remember that I moved to Porto"))
    other = await memory.submit(turn(bob, "Remember that I live in Oslo"))
    lease = timedelta(seconds=30)
    claimed = [await memory.store.claim_job(f"w{i}", clock.now, lease) for i in range(3)]
    # alice's later turn waits while her earlier one is in hand; bob is not held back
    assert sorted(j.id for j in claimed if j) == sorted([first.id, other.id])
    assert claimed[2] is None
    mine = next(j for j in claimed if j and j.id == first.id)
    await memory.writer.learn(
        alice,
        await memory.store.job_messages(mine),
        mine.conversation_id,
        mine.turn_at,
        None,
        claim=Claim(mine.id, mine.claimed_by),
    )
    assert (await memory.store.claim_job("w3", clock.now, lease)).id == second.id


async def test_a_turn_waiting_to_be_retried_holds_back_that_persons_later_turns(
    llm_memory, scripted_llm, alice, bob, clock
):
    earlier = await llm_memory.submit(turn(alice, "I keep bees on my balcony."))
    later = await llm_memory.submit(turn(alice, "I play the oboe."))
    scripted_llm.fail(503, "overloaded")
    w = worker(llm_memory, clock)
    assert await w.drain() == 1  # the earlier turn failed and waits; the later one is not due
    assert (await llm_memory.job(alice.user_id, later.id)).status == JobStatus.PENDING
    scripted_llm.reply_json(extraction("I live in Oslo"))
    await llm_memory.submit(turn(bob, "I live in Oslo."))
    assert await w.drain() == 1  # another person's turn goes ahead
    clock.advance(seconds=11)
    scripted_llm.reply_json(extraction("I keep bees on my balcony"))
    scripted_llm.reply_json(extraction("I play the oboe"))
    assert await w.drain() == 2
    order = [e.fact_id for e in await llm_memory.events(alice.user_id)]
    facts = {f.id: f.text for f in await llm_memory.list(alice)}
    assert [facts[i] for i in order] == ["I keep bees on my balcony", "I play the oboe"]
    assert {(await llm_memory.job(alice.user_id, j.id)).status for j in (earlier, later)} == {JobStatus.DONE}


@pytest.mark.slow
async def test_shutdown_mid_job_gives_the_job_back(llm_memory, scripted_llm, alice, clock):
    job = await llm_memory.submit(turn(alice, "I have a cat named Miso."))
    scripted_llm.stall(3.0, '{"facts": []}')
    w = worker(llm_memory, clock)
    task = asyncio.create_task(w.run_once())
    await asyncio.sleep(0.5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    back = await llm_memory.job(alice.user_id, job.id)
    assert back.status == JobStatus.PENDING and back.attempts == 0 and back.claimed_by is None


async def test_a_turn_of_a_deleted_agent_is_skipped_not_failed(memory, alice, clock):
    agent = await memory.accounts.create_agent(alice.user_id, "Chef")
    job = await memory.submit(turn(Scope(alice.user_id, agent.id), "Remember that I cook on Sundays"))
    await memory.delete_agent(alice.user_id, agent.id)
    assert await worker(memory, clock).drain() == 1
    done = await memory.job(alice.user_id, job.id)
    assert done.status == JobStatus.SKIPPED and done.attempts == 1
    assert done.result["skipped"] == "its agent was deleted" and done.result["skip_reason"] == "agent_deleted"
    assert await memory.list(Scope(alice.user_id, all_agents=True), statuses=None) == []


@pytest.mark.slow
async def test_a_model_that_answers_too_late_fails_the_turn_as_a_timeout(
    store, embedder, settings, clock, scripted_llm, alice
):
    from mnemo.build import Core
    from mnemo.providers.chat import OpenAIChatModel

    chat = OpenAIChatModel(scripted_llm.base_url, "test-key", "scripted-model", timeout=0.2, max_retries=0)
    memory = Core(store, embedder, chat, settings=settings, clock=clock).memory
    try:
        scripted_llm.stall(1.0, '{"facts": []}')
        job = await memory.submit(turn(alice, "I have a cat named Miso."))
        await worker(memory, clock, max_attempts=1).drain()
        failed = await memory.turn(alice.user_id, job.id)
        assert (failed.state, failed.reason, failed.attempts) == ("failed", "timeout", 1)
    finally:
        await chat.aclose()


async def test_people_are_taken_in_turn_whoever_queued_first(memory, alice, bob, clock):
    mine = [await memory.submit(turn(alice, f"Remember that my locker {i} is blue")) for i in range(5)]
    theirs = [await memory.submit(turn(bob, f"Remember that my shelf {i} is red")) for i in range(3)]
    w = worker(memory, clock)
    order = []
    while (done := await w.run_once()) is not None:
        order.append(done.id)
        clock.advance(seconds=1)
    a, b = [j.id for j in mine], [j.id for j in theirs]
    # alice queued all of hers first; the worker still alternates, each person's turns in order
    assert order == [a[0], b[0], a[1], b[1], a[2], b[2], a[3], a[4]]


async def test_a_backlog_of_one_person_delays_anothers_turn_by_one_turn_at_most(memory, alice, bob, clock):
    for i in range(150):
        await memory.submit(turn(alice, f"Remember that my locker {i} is blue"))
    clock.advance(seconds=1)
    w = worker(memory, clock)
    assert await w.run_once() is not None  # one of alice's, begun before bob's turn came
    clock.advance(seconds=1)
    other = await memory.submit(turn(bob, "Remember that I live in Oslo"))
    waited = 0
    while (await w.run_once()).id != other.id:
        waited += 1
        clock.advance(seconds=1)
    assert waited == 0  # bob's turn is the next one learnt from, not the 150th
    assert texts(await memory.list(bob)) == ["I live in Oslo"]
    # and after bob's, alice's backlog goes on in the order she queued it
    assert "my locker 1 is" in (await memory.store.job_messages(await w.run_once()))[0].content


async def test_a_person_past_the_queue_limit_is_refused_and_nothing_is_stored(memory, alice, bob, clock):
    memory.settings.jobs.max_queued_per_user = 3
    queued = [
        await memory.submit(turn(alice, f"Remember that my locker {i} is blue", conversation_id="c"))
        for i in range(3)
    ]
    held = await memory.store.conversation_messages(alice.user_id, "c")
    with pytest.raises(QueueFull, match="3 of your turns are waiting"):
        await memory.submit(turn(alice, "Remember that my locker 9 is green", conversation_id="c"))
    assert await memory.store.conversation_messages(alice.user_id, "c") == held
    assert await memory.queue_full(alice.user_id) and not await memory.queue_full(bob.user_id)
    # another person is not held back by alice's queue, and automation is never queued
    assert (await memory.submit(turn(bob, "Remember that I live in Oslo"))).status == JobStatus.PENDING
    assert await memory.submit(turn(alice, "Remember that I am root", automation=True)) is None
    # once the worker has learnt from one, there is room for one more
    assert (await worker(memory, clock).run_once()).id == queued[0].id
    assert not await memory.queue_full(alice.user_id)
    await memory.submit(turn(alice, "Remember that my locker 9 is green", conversation_id="c"))
    assert await memory.queue_full(alice.user_id)


async def test_turns_sent_at_once_at_the_queue_limit_pass_one_by_one(memory, alice):
    memory.settings.jobs.max_queued_per_user = 4
    for i in range(3):
        await memory.submit(turn(alice, f"Remember that my locker {i} is blue"))
    sent = await asyncio.gather(
        *(memory.submit(turn(alice, f"Remember that my shelf {i} is red")) for i in range(6)),
        return_exceptions=True,
    )
    assert sum(isinstance(s, QueueFull) for s in sent) == 5
    assert [s.status for s in sent if not isinstance(s, BaseException)] == [JobStatus.PENDING]
    assert await memory.store.queued_turns(alice.user_id) == 4
