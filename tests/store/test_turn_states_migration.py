"""Migration 13 ("turn_states") over a version 10 database: its jobs read back, the ones it
skipped (done, with the reason in their result) are skipped now, and a worker with a chat
model queues every user's waiting ones again."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

from mnemo.domain import JobStatus, Scope
from mnemo.memory import Memory
from mnemo.store import postgres as postgres_module
from mnemo.store import sqlite as sqlite_module
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import raw_sql, unmigrate
from tests.store.legacy import old_turn, old_user


async def test_a_version_10_databases_jobs_read_back_and_skipped_ones_are_skipped(
    make_store, embedder, monkeypatch, clock
):
    sqlite = isinstance(make_store(), SQLiteStore)
    module = sqlite_module if sqlite else postgres_module
    if not sqlite:  # the test's database is a copy of one migrated to the latest version
        await unmigrate(make_store())
    everything = module.MIGRATIONS
    monkeypatch.setattr(module, "MIGRATIONS", [m for m in everything if m.version <= 10])
    old = Memory(make_store(clock=clock), embedder)
    await old.open()
    assert (await old.store.schema_versions())[-1] == 10
    alice, bob = Scope(await old_user(old.store, "alice")), Scope(await old_user(old.store, "bob"))
    said = "Remember that I live in Lisbon"
    skipped, automation, done, pending = [
        SimpleNamespace(id=await old_turn(old.store, alice.user_id, f"c{i}", said, clock.now))
        for i in range(4)
    ]
    theirs = SimpleNamespace(id=await old_turn(old.store, bob.user_id, "c9", said, clock.now))
    results = {
        skipped.id: '{"skipped": "its agent was deleted", "problems": [], "events": 0}',
        automation.id: '{"skipped": "automation turns never write memory", "problems": [], "events": 0}',
        done.id: '{"skipped": null, "problems": [], "events": 1}',
    }
    for job_id, result in results.items():
        await raw_sql(
            old.store, f"UPDATE jobs SET status = 'done', result = '{result}' WHERE id = '{job_id}'"
        )
    # version 10 had no waiting status; these stand for jobs a worker without a model left
    await raw_sql(
        old.store, f"UPDATE jobs SET status = 'waiting' WHERE id IN ('{pending.id}', '{theirs.id}')"
    )
    await old.close()

    monkeypatch.setattr(module, "MIGRATIONS", everything)
    new = Memory(make_store(clock=clock), embedder)
    await new.open()
    try:
        assert (await new.store.schema_versions())[-1] == everything[-1].version
        read = {j.id: j for j in await new.jobs(alice.user_id)}
        assert (read[skipped.id].status, read[skipped.id].result["skip_reason"]) == (
            JobStatus.SKIPPED,
            "agent_deleted",
        )
        assert (read[automation.id].status, read[automation.id].result["skip_reason"]) == (
            JobStatus.SKIPPED,
            "automation",
        )
        assert read[done.id].status == JobStatus.DONE and read[done.id].result["events"] == 1
        turn = await new.turn(alice.user_id, skipped.id)
        assert (turn.state, turn.reason) == ("skipped", "agent_deleted")

        later = clock.now + timedelta(minutes=1)
        assert await new.store.requeue_waiting(later) == 2  # every user's
        for user, job in ((alice, pending), (bob, theirs)):
            back = await new.job(user.user_id, job.id)
            assert (back.status, back.next_attempt_at) == (JobStatus.PENDING, later)
        assert await new.store.requeue_waiting(later) == 0
    finally:
        await new.close()
