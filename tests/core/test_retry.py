"""Retrying a failed turn: queued again for its own person only, and only when it failed."""

from __future__ import annotations

import pytest

from mnemo.domain import InvalidInput, JobStatus, NotFound, new_id
from tests.core.test_jobs import turn, worker
from tests.helpers import extraction, texts


async def failed_turn(memory, scripted_llm, scope, clock):
    job = await memory.submit(turn(scope, "I have a cat named Miso."))
    scripted_llm.fail(503, "overloaded", times=2)
    w = worker(memory, clock, max_attempts=2)
    for _ in range(2):
        await w.drain()
        clock.advance(minutes=5)
    parked = await memory.job(scope.user_id, job.id)
    assert parked.status == JobStatus.FAILED and parked.attempts == 2
    return parked


async def test_a_failed_turn_retried_is_queued_now_with_its_attempts_reset_and_then_learnt(
    llm_memory, scripted_llm, alice, clock
):
    parked = await failed_turn(llm_memory, scripted_llm, alice, clock)
    woken: list[str] = []
    llm_memory.on_queued(lambda: woken.append("woken"))
    again = await llm_memory.retry_turn(alice.user_id, parked.id)
    assert (again.state, again.attempts, again.reason) == ("queued", 0, "model_unreachable")
    assert woken == ["woken"]
    job = await llm_memory.job(alice.user_id, parked.id)
    assert job.next_attempt_at == clock.now and job.last_error is None and job.finished_at is None
    scripted_llm.reply_json(extraction("I have a cat named Miso"))
    assert await worker(llm_memory, clock, max_attempts=2).drain() == 1
    learnt = await llm_memory.turn(alice.user_id, parked.id)
    assert learnt.state == "learnt" and learnt.attempts == 1 and len(learnt.facts["created"]) == 1
    assert texts(await llm_memory.list(alice)) == ["I have a cat named Miso"]


async def test_another_persons_failed_turn_is_not_found_and_stays_failed(
    llm_memory, scripted_llm, alice, bob, clock
):
    parked = await failed_turn(llm_memory, scripted_llm, alice, clock)
    with pytest.raises(NotFound, match="no turn"):
        await llm_memory.retry_turn(bob.user_id, parked.id)
    with pytest.raises(NotFound, match="no turn"):
        await llm_memory.retry_turn(alice.user_id, new_id())
    assert await llm_memory.job(alice.user_id, parked.id) == parked
    assert await llm_memory.jobs(bob.user_id) == []


async def test_a_turn_that_has_not_failed_is_not_retried_and_nothing_changes(memory, alice, clock):
    queued = await memory.submit(turn(alice, "Remember that I live in Lisbon"))
    with pytest.raises(InvalidInput, match="has not failed \\(it is pending\\)"):
        await memory.retry_turn(alice.user_id, queued.id)
    assert await memory.job(alice.user_id, queued.id) == queued
    clock.advance(seconds=1)
    await worker(memory, clock).drain()
    waiting = await memory.job(alice.user_id, queued.id)
    assert waiting.status == JobStatus.WAITING
    clock.advance(minutes=1)
    with pytest.raises(InvalidInput, match="it is waiting"):
        await memory.retry_turn(alice.user_id, queued.id)
    assert await memory.job(alice.user_id, queued.id) == waiting
    assert texts(await memory.list(alice)) == ["I live in Lisbon"]
