"""The PostgreSQL store's own duties: migrations, row-level security, several processes at once.

The behaviour every store shares is tested on both backends in tests/core;
these are the PostgreSQL twins of tests/store/test_sqlite.py, plus what only
a shared server has to get right. Those marked ON_CLUSTER_TOO run on a Citus
cluster as well (`--backend=citus` or `all`), where the rows are on the
workers: their checks reach every node.
"""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from mnemo.domain import Claim, Message, Scope
from mnemo.memory import Memory
from mnemo.store import postgres as postgres_module
from mnemo.store.migrate import Migration
from mnemo.store.migrations.postgres import APP_ROLE, MIGRATIONS, PROPAGATE_SETTINGS
from mnemo.store.postgres import AT_REST, PostgresStore
from tests.helpers import files_holding, node_urls, on_node, raw_sql, texts
from tests.store import legacy, version9

pytestmark = pytest.mark.backend("postgres")
# a test that holds on a Citus cluster too (its tables distributed by migration 18)
ON_CLUSTER_TOO = pytest.mark.parametrize("backend", ["postgres", "citus"], indirect=True)


async def as_app(store: PostgresStore, query: str, user_id: str | None = None, url: str = "") -> list[tuple]:
    """Run `query` as the application role, in a transaction that names `user_id` (or no one)
    as the store names it: SET LOCAL, which a Citus coordinator sends on to its workers. On the
    store's database, or on `url` (the same database on another node)."""
    async with await psycopg.AsyncConnection.connect(url or store.url) as conn:
        await conn.execute(f"SET ROLE {APP_ROLE}")
        await conn.execute(f"SET {PROPAGATE_SETTINGS} = 'local'")
        if user_id is not None:
            await conn.execute(sql.SQL("SET LOCAL mnemo.user_id = {}").format(sql.Literal(user_id)))
        cur = await conn.execute(query)
        return await cur.fetchall()


async def schema(store: PostgresStore) -> list[tuple]:
    """Everything that makes up the schema, in a comparable form."""
    parts = [
        "SELECT table_name, column_name, data_type, is_nullable, column_default, generation_expression"
        " FROM information_schema.columns WHERE table_schema = current_schema()",
        # (less the HNSW indexes, built when a user first needs one)
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        " AND indexname NOT LIKE 'fact_vectors_hnsw_%'",
        "SELECT tablename, policyname, qual, roles::text FROM pg_policies"
        " WHERE schemaname = current_schema()",
        "SELECT relname, relrowsecurity::text FROM pg_class"
        " WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'",
        "SELECT proname, prosecdef::text, pg_get_functiondef(p.oid) FROM pg_proc p"
        " WHERE pronamespace = current_schema()::regnamespace AND prokind = 'f'"
        " AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')",
        "SELECT table_name, privilege_type FROM information_schema.role_table_grants"
        f" WHERE grantee = '{APP_ROLE}' AND table_schema = current_schema()",
    ]
    out = []
    for part in parts:
        out += sorted((await raw_sql(store, part)), key=repr)
    return out


@ON_CLUSTER_TOO
async def test_a_fresh_database_records_its_migrations(store):
    assert await store.schema_versions() == [m.version for m in MIGRATIONS]


@pytest.mark.slow
async def test_an_older_database_upgrades_in_place_to_the_fresh_schema(
    make_store, postgres_url, postgres, embedder, monkeypatch
):
    """Data as the first schema held it, written as mnemo wrote it then: unsalted events of a
    purged PIN, a conversation id one user chose first (see tests/store/legacy.py)."""
    # the test's database starts at the template's schema: take it back to version 1
    await raw_sql(PostgresStore(postgres_url), "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    monkeypatch.setattr(postgres_module, "MIGRATIONS", MIGRATIONS[:1])
    first = make_store()
    await first.open()
    await first.close()
    assert await raw_sql(first, "SELECT version FROM schema_migrations") == [(1,)]
    with psycopg.connect(postgres_url) as conn:
        guessable = legacy.seed(
            conn, False, (await embedder.embed(["I live in Lisbon"]))[0], embedder.model_name
        )

    monkeypatch.setattr(postgres_module, "MIGRATIONS", MIGRATIONS)
    upgraded = await Memory(make_store(), embedder).open()
    assert await upgraded.store.schema_versions() == [m.version for m in MIGRATIONS]
    await legacy.check_upgraded(upgraded, guessable)
    fresh = PostgresStore(postgres.create_database())
    try:
        upgraded_schema = await schema(upgraded.store)
        assert len(upgraded_schema) > 100 and upgraded_schema == await schema(fresh)
    finally:
        postgres.drop_database(fresh.url)
    await upgraded.close()


def _columns(keys: str, table: str) -> str:
    """The names of a constraint's or an index's columns (`keys`, attribute numbers of `table`)."""
    return (
        f"ARRAY(SELECT a.attname::text FROM unnest({keys}) WITH ORDINALITY k(n, i)"
        f" JOIN pg_attribute a ON a.attrelid = {table} AND a.attnum = k.n ORDER BY k.i)"
    )


async def constraints(store: PostgresStore) -> set[tuple]:
    """(table, kind, columns, referenced table, its columns) of every primary key ('p'), unique
    constraint ('u') and foreign key ('f') in the schema."""
    rows = await raw_sql(
        store,
        "SELECT conrelid::regclass::text, contype::text, "
        + _columns("conkey", "conrelid")
        + ", NULLIF(confrelid, 0)::regclass::text, "
        + _columns("confkey", "confrelid")
        + " FROM pg_constraint WHERE connamespace = current_schema()::regnamespace"
        " AND contype IN ('p', 'u', 'f')",
    )
    return {(t, kind, tuple(cols), ref, tuple(ref_cols)) for t, kind, cols, ref, ref_cols in rows}


async def test_a_version_9_database_upgrades_to_keys_that_hold_the_user(
    make_store, postgres_url, embedder, monkeypatch
):
    """Facts, vectors of two models, events, jobs and keys as version 9 held them (see
    tests/store/version9.py): every per-user table is keyed with its user, and all of it
    still reads back and works."""
    await raw_sql(PostgresStore(postgres_url), "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    monkeypatch.setattr(postgres_module, "MIGRATIONS", MIGRATIONS[:9])
    old = make_store()
    await old.open()
    filled = await version9.fill(old, embedder)
    await old.close()

    monkeypatch.setattr(postgres_module, "MIGRATIONS", MIGRATIONS)
    upgraded = await Memory(make_store(), embedder).open()
    assert await upgraded.store.schema_versions() == [m.version for m in MIGRATIONS]
    changed = ("facts", "fact_vectors", "fact_events", "jobs", "api_keys")
    assert {c for c in await constraints(upgraded.store) if c[0] in changed} == {
        ("facts", "p", ("user_id", "rowid"), None, ()),
        ("facts", "u", ("user_id", "id"), None, ()),
        ("fact_vectors", "p", ("user_id", "fact_rowid", "model"), None, ()),
        ("fact_vectors", "f", ("user_id", "fact_rowid"), "facts", ("user_id", "rowid")),
        ("fact_events", "p", ("user_id", "seq"), None, ()),
        ("jobs", "p", ("user_id", "id"), None, ()),
        ("jobs", "f", ("user_id",), "users", ("id",)),
        ("api_keys", "p", ("user_id", "id"), None, ()),
        ("api_keys", "f", ("user_id",), "users", ("id",)),
    }
    await version9.check_upgraded(upgraded, filled)
    await upgraded.close()


# Tables with a row-level policy that a distributed PostgreSQL (Citus) would hold as reference
# tables, copied whole to every node (docs/scaling.md): their keys need not hold the user.
# users' own key is the user's id; agents are few, and keyed by their id alone.
REFERENCE_TABLES = {"users", "agents"}


@ON_CLUSTER_TOO
async def test_every_per_user_table_is_keyed_by_its_user(store):
    """What distributing the per-user tables by user_id needs (Citus): the owner column (the one
    a table's row-level policy matches with the transaction's user) is in every primary key and
    unique constraint or index, and in both sides of a foreign key between two such tables."""
    policies = await raw_sql(
        store, "SELECT tablename::text, qual FROM pg_policies WHERE schemaname = current_schema()"
    )
    owners = {table: re.match(r"\((\w+) = current_setting\(", qual).group(1) for table, qual in policies}
    assert owners.keys() >= REFERENCE_TABLES
    owners = {t: o for t, o in owners.items() if t not in REFERENCE_TABLES}
    assert set(owners) >= {
        "facts",
        "fact_vectors",
        "fact_events",
        "vector_counts",
        "fact_counts",
        "conversations",
        "messages",
        "jobs",
        "api_keys",
        "backfill_progress",
    }
    found = await constraints(store)
    unique_indexes = await raw_sql(
        store,
        "SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text, "
        + _columns("i.indkey", "i.indrelid")
        + " FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
        " WHERE i.indisunique AND c.relnamespace = current_schema()::regnamespace",
    )
    for table, owner in owners.items():
        assert any(c[:2] == (table, "p") for c in found), f"{table} has no primary key"
        for _, kind, columns, ref, ref_columns in (c for c in found if c[0] == table):
            if kind in ("p", "u"):
                assert owner in columns, (table, kind, columns)
            elif ref in owners:
                assert (owner, owners[ref]) in zip(columns, ref_columns, strict=True), (table, ref)
        for _, index, columns in (i for i in unique_indexes if i[0] == table):
            assert owner in columns, (table, index, columns)


async def test_a_new_migration_applies_once(make_store, monkeypatch):
    def add_nickname(cur):
        cur.execute("ALTER TABLE users ADD COLUMN nickname text")

    newer = [*MIGRATIONS, Migration(MIGRATIONS[-1].version + 1, "nickname", add_nickname)]
    monkeypatch.setattr(postgres_module, "MIGRATIONS", newer)
    for _ in range(2):
        store = make_store()
        await store.open()
        assert await store.schema_versions() == [m.version for m in newer]
        await store.close()
    columns = await raw_sql(
        store, "SELECT column_name FROM information_schema.columns WHERE table_name = 'users'"
    )
    assert ("nickname",) in columns


async def test_a_failing_migration_leaves_the_database_as_it_was(make_store, monkeypatch):
    def broken(cur):
        cur.execute("CREATE TABLE half_done (x integer)")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(postgres_module, "MIGRATIONS", [*MIGRATIONS, Migration(99, "broken", broken)])
    with pytest.raises(RuntimeError, match="disk on fire"):
        await make_store().open()
    monkeypatch.undo()
    again = make_store()
    await again.open()
    assert 99 not in await again.schema_versions()
    assert await raw_sql(again, "SELECT to_regclass('half_done')::text") == [(None,)]
    await again.close()


@pytest.mark.slow
@ON_CLUSTER_TOO
async def test_a_second_store_on_the_same_database_sees_every_write(make_store, embedder):
    server = await Memory(make_store(), embedder).open()
    worker = await Memory(make_store(), embedder).open()
    alice = Scope((await server.accounts.user("alice")).id)
    kayak = await server.add(alice, "I own a red kayak")
    assert texts(await worker.recall("boat", alice, arms=("semantic",))) == ["I own a red kayak"]

    await server.retract(alice, kayak.id)
    await server.add(alice, "I own a blue canoe")
    assert texts(await worker.recall("boat", alice, arms=("semantic",))) == ["I own a blue canoe"]
    await worker.purge(alice, kayak.id)
    assert texts(await server.recall("boat", alice, arms=("semantic",))) == ["I own a blue canoe"]
    assert (await server.verify_audit(alice.user_id)).ok
    await server.close()
    await worker.close()


# -- row-level security ------------------------------------------------------------


@ON_CLUSTER_TOO
async def test_a_query_that_forgot_its_user_sees_no_rows(memory, alice, bob):
    await memory.add(alice, "My bank PIN is 9182")
    await memory.add(bob, "I like coffee")
    await memory.store.enqueue_turn(alice, "c1", [Message("user", "hello")], memory.clock())
    await memory.accounts.create_api_key(alice.user_id)
    await memory.accounts.create_agent(alice.user_id, "Chef")

    for table in (
        "facts",
        "fact_events",
        "fact_vectors",
        "vector_counts",
        "conversations",
        "messages",
        "jobs",
        "api_keys",
        "agents",
        "users",
        "fact_counts",
    ):
        assert await as_app(memory.store, f"SELECT * FROM {table}") == [], table
    assert await as_app(memory.store, "SELECT text FROM facts", bob.user_id) == [("I like coffee",)]
    assert await as_app(memory.store, "SELECT text FROM facts", alice.user_id) == [("My bank PIN is 9182",)]


@ON_CLUSTER_TOO
async def test_every_table_of_user_rows_is_behind_the_wall(store):
    """On every node: on a Citus cluster the workers' shards (facts_102008, …) hold the rows."""
    for url in node_urls(store.url):
        guarded = dict(
            on_node(
                url,
                "SELECT c.relname, c.relrowsecurity FROM pg_class c"
                " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
                " AND (c.relname ~ '^users(_[0-9]+)?$' OR EXISTS"
                "      (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id'))",
            )
        )
        assert {n.rsplit("_", 1)[0] for n in guarded} >= {"users", "facts", "messages"}, (url, guarded)
        assert [n for n, on in guarded.items() if not on] == [], url


@ON_CLUSTER_TOO
async def test_writing_another_users_rows_is_refused(memory, alice, bob):
    await memory.add(alice, "I like tea")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        await as_app(
            memory.store,
            f"INSERT INTO conversations VALUES ('c9', '{alice.user_id}', NULL, now()) RETURNING id",
            bob.user_id,
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        await as_app(memory.store, "DELETE FROM fact_events RETURNING seq", alice.user_id)


@pytest.mark.backend("citus")
async def test_a_worker_reached_directly_shows_each_user_only_their_own_rows(memory, alice, bob):
    """On Citus the application role may log in (the coordinator connects to the workers as
    that role): whoever reaches a worker with it meets the same wall there, on the
    distributed table (a worker can plan queries too) and on each shard by its own name."""
    await memory.add(alice, "My bank PIN is 9182")
    await memory.add(bob, "I like coffee")
    _, *workers = node_urls(memory.store.url)
    shards = await raw_sql(
        memory.store,
        "SELECT shard_name('facts'::regclass, shardid) FROM pg_dist_shard"
        " WHERE logicalrelid = 'facts'::regclass",
    )
    seen: dict[str | None, set[str]] = {None: set(), alice.user_id: set(), bob.user_id: set()}
    asked = 0
    for url in workers:
        here = [s for (s,) in shards if on_node(url, f"SELECT to_regclass('{s}')") != [(None,)]]
        for table in ["facts", *here]:
            for who, found in seen.items():
                rows = await as_app(memory.store, f"SELECT text FROM {table}", who, url)
                found.update(text for (text,) in rows)
                asked += 1
    assert asked >= 3 * (len(workers) + len(shards))  # every shard is on some worker
    assert seen == {None: set(), alice.user_id: {"My bank PIN is 9182"}, bob.user_id: {"I like coffee"}}


# -- several processes -----------------------------------------------------------------


@pytest.mark.slow
@ON_CLUSTER_TOO
async def test_concurrent_claims_hand_out_each_job_once_one_per_person_in_order(make_store, clock):
    first, second = make_store(clock=clock, max_size=8), make_store(clock=clock, max_size=8)
    await first.open()
    await second.open()
    users = [await first.ensure_user(name) for name in ("alice", "bob", "carol")]
    queued: dict[str, list[str]] = {u.id: [] for u in users}
    for i in range(30):
        user = users[i % 3]
        job = await first.enqueue_turn(Scope(user.id), f"c{i}", [Message("user", f"turn {i}")], clock.now)
        queued[user.id].append(job.id)
    in_hand: set[str] = set()  # users whose job a worker holds now
    claimed: dict[str, list[str]] = {u.id: [] for u in users}

    async def worker(store, name):
        mine = 0
        while sum(map(len, claimed.values())) < 30:
            job = await store.claim_job(name, clock.now, timedelta(minutes=5))
            if job is None:
                await asyncio.sleep(0.002)
                continue
            assert job.user_id not in in_hand, "two of one person's turns in hand at once"
            in_hand.add(job.user_id)
            claimed[job.user_id].append(job.id)
            await asyncio.sleep(0.001)  # "learning"
            in_hand.discard(job.user_id)
            await store.commit(job.user_id, [], clock.now, finish=(Claim(job.id, name), {}))
            mine += 1
        return mine

    done = await asyncio.gather(*(worker(s, f"w{i}") for i, s in enumerate([first, second] * 4)))
    assert claimed == queued  # each job once, and each person's in the order they came
    assert sum(1 for n in done if n) > 1  # the work was really shared
    await first.close()
    await second.close()


@pytest.mark.slow
@ON_CLUSTER_TOO
async def test_concurrent_writers_for_one_user_keep_one_chain(make_store, embedder):
    one = await Memory(make_store(), embedder).open()
    two = await Memory(make_store(), embedder).open()
    alice = Scope((await one.accounts.user("alice")).id)
    await asyncio.gather(*(m.add(alice, f"Fact number {i}") for i in range(12) for m in (one, two)))
    report = await one.verify_audit(alice.user_id)
    assert report.ok, report.problems
    assert report.events == 24  # one event per add, whether it created or reinforced
    await one.close()
    await two.close()


@ON_CLUSTER_TOO
async def test_the_counts_searches_rely_on_follow_every_change(memory, alice, bob):
    kept = await memory.add(alice, "I like tea")
    gone = await memory.add(alice, "I own a red kayak")
    await memory.add(bob, "I like coffee")
    await memory.edit(alice, kept.id, "I like green tea")
    await memory.retract(alice, gone.id)
    await memory.restore(alice, gone.id)
    await memory.purge(alice, gone.id)
    await memory.add(alice, "I like tea")  # a restatement reinforces: no new fact

    counted = await raw_sql(memory.store, "SELECT user_id, active FROM fact_counts ORDER BY active")
    actual = await raw_sql(
        memory.store,
        "SELECT user_id, count(*) FROM facts WHERE status = 'active' AND NOT purged"
        " GROUP BY user_id ORDER BY count(*)",
    )
    assert counted == actual and sorted(n for _, n in counted) == [1, 2]
    vectors = await raw_sql(memory.store, "SELECT user_id, model, n FROM vector_counts ORDER BY n")
    assert vectors == await raw_sql(
        memory.store, "SELECT user_id, model, count(*) FROM fact_vectors GROUP BY 1, 2 ORDER BY 3"
    )
    mirrored = await raw_sql(
        memory.store,
        "SELECT count(*) FROM fact_vectors v JOIN facts f ON f.user_id = v.user_id AND f.rowid = v.fact_rowid"
        " WHERE v.active <> (f.status = 'active' AND NOT f.purged)"
        " OR v.agent_key <> COALESCE(f.agent_id, '')",
    )
    assert mirrored == [(0,)]


@ON_CLUSTER_TOO
async def test_a_purged_text_leaves_the_table_files_after_vacuum_full(memory, alice):
    """What docs/reliability.md says of PostgreSQL: a purge makes the text unreadable by any
    query at once, but its old row versions stay in the table and index files, even after a
    plain VACUUM, until VACUUM FULL rewrites them (the write-ahead log keeps them until it is
    recycled)."""
    pin = await memory.add(alice, "My bank PIN is 442618")
    await memory.edit(alice, pin.id, "My bank PIN is 442618, the blue card")
    await memory.purge(alice, pin.id)

    nodes = node_urls(memory.store.url)
    assert "facts" in files_holding(nodes, b"442618", AT_REST.replace(" FULL", ""))  # a plain VACUUM
    assert files_holding(nodes, b"442618", AT_REST) == []
    assert (await memory.verify_audit(alice.user_id)).ok


@ON_CLUSTER_TOO
async def test_each_kind_of_erasure_leaves_the_table_files_after_vacuum_full(memory, alice):
    """Each kind of erasure (a memory with its message, a conversation, what was ticked,
    everything), as docs/reliability.md says of PostgreSQL: once VACUUM FULL has rewritten the
    tables, none of the erased words is in any table or index file."""
    at = memory.clock()
    said = {
        "c1": "My bank PIN is 442618",
        "c2": "I fly to Reykjavik on May 3",
        "c3": "My locker code is 771305",
        "c4": "My passport number is X5519027",
    }
    for conversation, text in said.items():
        await memory.store.save_messages(alice, conversation, [Message("user", text)], at)
    pin = await memory.add(alice, "My bank PIN is 442618")
    locker = await memory.add(alice, "My locker code is 771305")

    nodes = node_urls(memory.store.url)
    assert "messages" in files_holding(nodes, b"Reykjavik")  # the check can see it while it is there
    await memory.purge(alice, pin.id)
    await memory.erase_conversation(alice.user_id, "c2")
    _, messages = await memory.about(alice.user_id, "locker code")
    await memory.erase_selection(alice.user_id, [locker.id], [m for _, m, _ in messages])
    await memory.erase_everything(alice.user_id)
    files_holding(nodes, b"", AT_REST)  # the one statement mnemo doctor and the docs name
    for needle in (b"442618", b"Reykjavik", b"771305", b"X5519027"):
        assert files_holding(nodes, needle) == [], needle


def test_the_docs_name_the_statement_the_tests_run():
    """docs/reliability.md shows the one statement that takes erased texts out of the table files,
    as `mnemo doctor` prints it and the tests above run it."""
    doc = (Path(__file__).parents[2] / "docs" / "reliability.md").read_text()
    assert AT_REST in doc
