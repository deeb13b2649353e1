"""What running a server asks across users (everyone, the queue's counts) and the workers'
heartbeats (migration 12, "operations"), on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mnemo import keys
from mnemo.domain import Message, Scope
from mnemo.health import Health
from mnemo.settings import HealthSettings
from mnemo.store import postgres as postgres_module
from mnemo.store import sqlite as sqlite_module
from tests.helpers import unmigrate
from tests.store.legacy import old_turn, old_user

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_everyone_and_the_queue_are_seen_across_users(store, clock):
    assert await store.list_users() == [] and await store.job_counts() == {}
    zed, amy = await store.ensure_user("zed"), await store.ensure_user("Amy ✓")
    await store.add_api_key(keys.new_key(zed.id, "k", T0)[0])
    for user in (zed, amy, amy):
        await store.enqueue_turn(Scope(user.id), "c", [Message("user", "hi")], T0)
    listed = await store.list_users()
    assert [(u.name, u.id) for u in listed] == [("Amy ✓", amy.id), ("zed", zed.id)]
    assert all(u.created_at == clock() for u in listed)
    assert await store.job_counts() == {"pending": 3}


async def test_heartbeats_are_one_row_per_worker_and_silent_ones_are_forgotten(store):
    await store.beat("a", T0, T0 - timedelta(days=1))
    await store.beat("b", T0 + timedelta(seconds=5), T0 - timedelta(days=1))
    await store.beat("a", T0 + timedelta(seconds=10), T0 - timedelta(days=1))  # the same row, later
    assert await store.heartbeats(T0) == [T0 + timedelta(seconds=10), T0 + timedelta(seconds=5)]
    assert await store.heartbeats(T0 + timedelta(seconds=6)) == [T0 + timedelta(seconds=10)]
    await store.forget_worker("a")
    assert await store.heartbeats(T0) == [T0 + timedelta(seconds=5)]
    later = T0 + timedelta(days=2)
    await store.beat("c", later, later - timedelta(days=1))  # b has been silent for two days
    assert await store.heartbeats(T0 - timedelta(days=10)) == [later]


async def test_readiness_says_failed_when_the_database_does_not_answer(make_store):
    store = make_store()
    await store.open()
    health = Health(store, None, HealthSettings())
    assert (await health.database()).status == "ok"
    await store.close()
    down = await health.database()
    assert down.status == "failed" and set(down.details) == {"error"}
    assert (await health.workers()).status == "failed"


async def test_a_version_10_database_gains_the_listing_and_the_heartbeats(
    backend, make_store, request, monkeypatch
):
    module = sqlite_module if backend == "sqlite" else postgres_module
    if backend != "sqlite":
        await unmigrate(make_store())
    monkeypatch.setattr(module, "MIGRATIONS", [m for m in module.MIGRATIONS if m.version <= 10])
    old = make_store()
    await old.open()
    bob, amy = await old_user(old, "bob"), await old_user(old, "amy")
    await old_turn(old, bob, "c", "hi", T0)
    await old.close()
    monkeypatch.undo()

    upgraded = make_store()
    await upgraded.open()
    try:
        assert (await upgraded.schema_versions())[-1] == module.MIGRATIONS[-1].version
        assert [u.id for u in await upgraded.list_users()] == [amy, bob]
        assert await upgraded.job_counts() == {"pending": 1}
        await upgraded.beat("w", T0, T0 - timedelta(days=1))
        assert await upgraded.heartbeats(T0) == [T0]
    finally:
        await upgraded.close()
