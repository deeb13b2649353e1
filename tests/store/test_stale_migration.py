"""Migration 23 ("stale_review") over a database whose recall log holds recalls: each recalled
fact takes the time of its last recall, so an upgrade offers no fact recalled yesterday as stale."""

from __future__ import annotations

from datetime import timedelta

from mnemo.domain import Category, RecallVia, Scope
from mnemo.memory import Memory
from tests.helpers import raw_sql, texts


async def test_the_upgrade_reads_when_facts_were_last_recalled_from_the_log(make_store, embedder, clock):
    memory = await Memory(make_store(clock=clock), embedder, clock=clock).open()
    alice = Scope((await memory.accounts.user("alice")).id)
    await memory.add(alice, "I plan to learn the cello", category=Category.PLAN)
    await memory.add(alice, "I plan to visit Kyoto", category=Category.PLAN)
    clock.advance(days=80)
    await memory.recall("the cello", alice, via=RecallVia.PROXY)
    await memory.write_recall_log()  # written after the reply: before the schema goes back
    recalled = clock.now
    # the database as version 22 left it: no column, no switch, the log's rows
    for sql in (
        "ALTER TABLE facts DROP COLUMN last_recalled_at",
        "ALTER TABLE users DROP COLUMN review_stale",
        "DELETE FROM schema_migrations WHERE version = 23",
    ):
        await raw_sql(memory.store, sql)
    await memory.close()

    clock.advance(days=20)
    upgraded = await Memory(make_store(clock=clock), embedder, clock=clock).open()
    try:
        assert 23 in await upgraded.store.schema_versions()
        assert texts(await upgraded.stale(alice)) == ["I plan to visit Kyoto"]
        rows = await raw_sql(
            upgraded.store, "SELECT last_recalled_at FROM facts WHERE last_recalled_at IS NOT NULL"
        )
        assert len(rows) == 1
        assert (await upgraded.store.get_user(alice.user_id)).review_stale is True
        clock.advance(days=71)  # 91 days after that recall
        assert len(await upgraded.stale(alice)) == 2
    finally:
        await upgraded.close()
    assert recalled < clock.now - timedelta(days=90)
