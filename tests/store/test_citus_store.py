"""mnemo's schema on a Citus cluster (migration 18): what is distributed, what is a reference
table, that the migration may run again, and that a PostgreSQL database with rows moves onto a
cluster in place (docs/scaling.md). The store's behaviour on the cluster is tested by
the backend-parametrised suites with `--backend=citus` (tests/conftest.py)."""

from __future__ import annotations

import logging

import psycopg
import pytest

from mnemo.domain import Message, Scope
from mnemo.memory import Memory
from mnemo.store.migrations.postgres import APP_ROLE
from mnemo.store.migrations.postgres_citus import DISTRIBUTED_TABLES, REFERENCE_TABLES, distribute
from mnemo.store.postgres import AT_REST, PostgresStore
from tests.helpers import async_commits_on_a_worker, files_holding, node_urls
from tests.recipes.snippets import DOCS, recipe

pytestmark = [pytest.mark.backend("citus"), pytest.mark.citus, pytest.mark.slow]


def _layout(conn: psycopg.Connection) -> dict[str, tuple[str, str | None, int]]:
    """table -> (Citus's method: 'h' hash-distributed, 'n' reference; its column; colocation)."""
    rows = conn.execute(
        "SELECT logicalrelid::regclass::text, partmethod, column_to_column_name(logicalrelid, partkey),"
        " colocationid FROM pg_dist_partition"
    ).fetchall()
    return {table: (method, column, group) for table, method, column, group in rows}


def test_every_per_user_table_is_distributed_by_user_and_the_shared_ones_are_reference_tables(
    citus_store_url,
):
    with psycopg.connect(citus_store_url) as conn:
        layout = _layout(conn)
        # the tables the row-level policies guard, but `users` (a policy on its id)
        per_user = {
            t
            for (t,) in conn.execute("SELECT DISTINCT tablename FROM pg_policies WHERE tablename <> 'users'")
        }
        can_login = conn.execute(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (APP_ROLE,)
        ).fetchone()
    assert {t for t, (method, _, _) in layout.items() if method == "n"} == set(REFERENCE_TABLES)
    distributed = {t: rest for t, rest in layout.items() if rest[0] == "h"}
    assert per_user - set(REFERENCE_TABLES) == set(distributed)
    assert {(column, group) for _, column, group in distributed.values()} == {
        ("user_id", layout["facts"][2])
    }, "one column and one colocation group: a user's rows of every table in one shard group"
    assert can_login == (True,)  # the coordinator connects to the workers as this role


def test_the_migration_runs_again_without_changing_anything(citus_store_url):
    with psycopg.connect(citus_store_url) as conn:
        before = _layout(conn)
        with conn.transaction(), conn.cursor() as cur:
            distribute(cur)
        assert _layout(conn) == before


async def _opened(url: str) -> None:
    store = PostgresStore(url)
    await store.open()
    await store.close()


async def test_opening_the_store_warns_of_a_worker_that_acknowledges_commits_before_writing_them(
    citus_store_url, caplog
):
    """A shard moved off a node with `synchronous_commit = off` can lose writes acknowledged just
    before the switch (docs/scaling.md, "Adding a worker"): the store says so when it opens,
    naming the node, and says nothing of nodes that write first."""
    caplog.set_level(logging.WARNING, "mnemo.store.postgres")
    await _opened(citus_store_url)
    assert [r.getMessage() for r in caplog.records] == []

    with async_commits_on_a_worker(citus_store_url) as (at, others):
        await _opened(citus_store_url)
    (warned,) = [r.getMessage() for r in caplog.records]
    assert warned.startswith(f"synchronous_commit is off on {at}: writes acknowledged while Citus moves")
    assert others and not [o for o in others if o in warned]


async def _memories(memory: Memory) -> dict:
    """Everything each person has, as they would read it: facts of every status with their
    versions, their history's length, conversations with their messages, jobs, keys, agents."""
    seen = {}
    for member in await memory.accounts.members():
        uid = member.user.id
        everything = Scope(uid, all_agents=True)
        facts = await memory.list(everything, statuses=None, limit=1000)
        seen[member.user.name] = {
            "facts": sorted((f.id, f.text, f.status, f.version) for f in facts),
            "history": {f.id: len(await memory.history(everything, f.id)) for f in facts},
            "messages": [(m.role, m.content) for m in await memory.messages(uid, "c1")],
            "jobs": sorted((j.id, j.status) for j in await memory.jobs(uid)),
            "keys": sorted(k.id for k in await memory.accounts.api_keys(uid)),
            "agents": sorted(a.name for a in await memory.accounts.agents(uid)),
        }
    return seen


async def test_a_postgresql_database_with_rows_moves_onto_the_cluster_in_place(citus, embedder):
    """docs/scaling.md's "Moving onto Citus", with its recipe: mnemo's database on the
    coordinator's server is plain PostgreSQL with two people's memories; the recipe makes it
    a coordinator of the two workers; mnemo's next start distributes the tables, rows and all."""
    url = citus.create_plain_database()
    try:
        memory = await Memory(PostgresStore(url), embedder).open()
        for name in ("alice", "bob"):
            me = Scope((await memory.accounts.user(name)).id)
            home = await memory.add(me, f"{name.title()} lives in Porto")
            await memory.edit(me, home.id, f"{name.title()} lives in Lisbon")
            kayak = await memory.add(me, "I own a red kayak")
            await memory.retract(me, kayak.id)
            pin = await memory.add(me, "My bank PIN is 442618")
            await memory.purge(me, pin.id)
            said = [Message("user", "I fly to Reykjavik")]
            await memory.store.save_messages(me, "c1", said, memory.clock())
            await memory.store.enqueue_turn(me, "c2", [Message("user", "hello")], memory.clock())
            await memory.accounts.create_api_key(me.user_id)
            chef = await memory.accounts.create_agent(me.user_id, "Chef")
            await memory.add(Scope(me.user_id, chef.id), "I cook with cast iron")
        before = await _memories(memory)
        await memory.close()

        language, text = recipe("postgres-to-citus", DOCS / "scaling.md")
        coordinator, workers = citus.coordinator, list(citus.workers)
        lines = [line for line in text.splitlines() if line.strip()]
        assert language == "sql" and len([x for x in lines if "citus_add_node" in x]) == len(workers)
        with psycopg.connect(url, autocommit=True) as conn:
            for line in lines:
                if "citus_set_coordinator_host" in line:
                    conn.execute("SELECT citus_set_coordinator_host(%s, %s)", coordinator)
                elif "citus_add_node" in line:
                    conn.execute("SELECT citus_add_node(%s, %s)", workers.pop(0))
                else:
                    conn.execute(line)
            assert not _layout(conn)  # nothing distributed yet: mnemo does it when it starts

        moved = await Memory(PostgresStore(url), embedder).open()
        try:
            assert await _memories(moved) == before
            for name, found in before.items():
                uid = (await moved.accounts.user(name)).id
                assert (await moved.verify_audit(uid)).ok, name
                assert [f.text for f in await moved.recall("where do I live?", Scope(uid))][:1] == [
                    f"{name.title()} lives in Lisbon"
                ]
                assert len(found["facts"]) == 4
            with psycopg.connect(url) as conn:
                layout = _layout(conn)
            assert {t for t, (method, _, _) in layout.items() if method == "h"} == set(DISTRIBUTED_TABLES)

            # the rows are on the workers, and the coordinator keeps no copy of them
            coordinator_url, *worker_urls = node_urls(url)
            assert "facts" in files_holding(worker_urls, b"lives in Lisbon")
            assert "messages" in files_holding(worker_urls, b"Reykjavik")
            for text in (b"lives in Lisbon", b"red kayak", b"Reykjavik", b"442618"):
                assert files_holding([coordinator_url], text) == [], text
            # the PINs purged before the move, and the kayaks purged after it, are on no node's disk
            for name in before:
                me = Scope((await moved.accounts.user(name)).id)
                kayak = next(f for f in await moved.list(me, statuses=None) if "kayak" in f.text)
                await moved.purge(me, kayak.id)
            assert files_holding(node_urls(url), b"red kayak", AT_REST) == []
            assert files_holding(node_urls(url), b"442618") == []
        finally:
            await moved.close()
    finally:
        citus.drop_database(url)
