"""Small helpers shared by the tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from mnemo.batch.backfill import Backfill
from mnemo.batch.jobs import Worker
from mnemo.batch.transfer import Destination


class Clock:
    """Injectable time: tests replay history at chosen dates."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def worker_for(memory, **options: Any) -> Worker:
    """A job worker over the store, writer and accounts of `memory` (mnemo.build.Core.worker
    wires the same parts)."""
    return Worker(memory.store, memory.writer, memory.accounts, **options)


def backfill_for(memory, **options: Any) -> Backfill:
    """Backfill over the store, writer and accounts of `memory` (as mnemo.build.Core.backfill)."""
    return Backfill(memory.store, memory.writer, memory.accounts, clock=memory.clock, **options)


def into(memory) -> Destination:
    """Where an import into `memory` writes (mnemo.build.Core is one too)."""
    return SimpleNamespace(memory=memory, accounts=memory.accounts, store=memory.store)


def texts(items) -> list[str]:
    """The texts of facts or hits, in order."""
    return [getattr(i, "fact", i).text for i in items]


async def bulk_add(memory, scope, sentences: list[str]) -> None:
    """Seed many facts at the clock's current time in one transaction (fast set-up)."""
    from mnemo.domain import Source
    from mnemo.write import changes

    now = memory.clock()
    vectors = await _embed_once(memory.embedder, sentences)
    batch = [
        changes.create(
            changes.new_fact(
                scope, text, now=now, source=Source(), embedding_model=memory.embedder.model_name
            ),
            vector,
            "import",
        )
        for text, vector in zip(sentences, vectors, strict=True)
    ]
    await memory.store.commit(scope.user_id, batch, now)


_VECTORS: dict[tuple[str, str], object] = {}


async def _embed_once(embedder, sentences: list[str]) -> list:
    """The embedder's vectors, each sentence embedded once per session (the seeds repeat)."""
    missing = [s for s in dict.fromkeys(sentences) if (embedder.model_name, s) not in _VECTORS]
    if missing:
        for sentence, vector in zip(missing, await embedder.embed(missing), strict=True):
            _VECTORS[(embedder.model_name, sentence)] = vector
    return [_VECTORS[(embedder.model_name, s)] for s in sentences]


def unrelated_facts(n: int) -> list[str]:
    """n (at most 2,500) distinct, plausible facts about things and people, none about where one lives."""
    things = [
        "a red kayak",
        "a sourdough starter",
        "a vintage camera",
        "a chess set",
        "a bonsai tree",
        "a telescope",
        "a mandolin",
        "a sewing machine",
        "a tandem bicycle",
        "a pottery wheel",
    ]
    verbs = [
        "bought",
        "repaired",
        "sold",
        "borrowed",
        "painted",
        "cleaned",
        "lost",
        "found",
        "photographed",
        "gave away",
    ]
    people = [
        "my cousin Ravi",
        "my neighbour Lena",
        "my colleague Tomasz",
        "my friend Aiko",
        "my uncle Pedro",
        "my aunt Fatima",
        "my classmate Jonas",
        "my coach Mireille",
        "my landlord Otto",
        "my barber Sami",
        "my dentist Ines",
        "my niece Clara",
        "my nephew Bruno",
        "my grandfather Emil",
        "my teacher Noor",
        "my roommate Kofi",
        "my boss Helga",
        "my tailor Yusuf",
        "my godson Matteo",
        "my pen pal Signe",
        "my trainer Dario",
        "my mentor Priya",
        "my stepbrother Luca",
        "my florist Anouk",
        "my pharmacist Jorge",
    ]
    out = []
    for person in people:
        for verb in verbs:
            for thing in things:
                out.append(f"I {verb} {thing} with {person}")
    return out[:n]


def extraction(*facts: str | dict) -> dict:
    """A scripted extractor reply."""
    items = [
        f if isinstance(f, dict) else {"text": f, "confidence": 0.95, "speaker": "user", "message": 1}
        for f in facts
    ]
    return {"facts": items}


def decisions(*items: tuple) -> dict:
    """A scripted reconciler reply from (new, action, target) triples."""
    return {"decisions": [{"new": n, "action": a, "target": t} for n, a, t in items]}


def in_store(data_dir, embedder, work, database_url: str | None = None):
    """Run `work(memory)` over the database a process (server, CLI) used: `database_url`'s, or the
    SQLite file it left in `data_dir`."""
    import asyncio

    from mnemo.build import build_store
    from mnemo.memory import Memory
    from mnemo.settings import Settings

    async def go():
        memory = Memory(build_store(Settings(data_dir=data_dir, database_url=database_url)), embedder)
        await memory.open()
        try:
            return await work(memory)
        finally:
            await memory.store.close()

    return asyncio.run(go())


# mnemo's schema, dropped: its tables (with their policies, indexes and triggers) and its
# functions; the extensions stay, as Citus keeps its own objects in the schema
_UNMIGRATE = r"""
DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', r.tablename);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace
               AND (p.proname LIKE 'mnemo\_%' OR p.proname = 'fact_events_append_only') LOOP
        EXECUTE 'DROP FUNCTION ' || r.f;
    END LOOP;
END $$
"""


async def unmigrate(store) -> None:
    """Drop mnemo's schema from a PostgreSQL (or Citus) store's database, so that the next store
    opened on it migrates from nothing (an upgrade test's older version first)."""
    await raw_sql(store, _UNMIGRATE)


async def raw_sql(store, sql: str) -> list[tuple]:
    """Run `sql` on the store's database behind the store's back, with the owner's powers.

    SQLite: the store's own connection. PostgreSQL: a new connection as the
    test server's superuser, which row-level security does not hold back.
    For tests that tamper with the data or look at all of it.
    """
    from mnemo.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return store._conn.execute(sql).fetchall()
    import psycopg

    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        cur = await conn.execute(sql)
        return await cur.fetchall() if cur.description else []


async def every_row(store) -> str:
    """Every row of every table of the store's database, as one text."""
    from mnemo.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        tables = "SELECT name FROM sqlite_master WHERE type = 'table'"
    else:
        tables = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    rows = []
    for (table,) in await raw_sql(store, tables):
        rows += await raw_sql(store, f'SELECT * FROM "{table}"')
    return repr(rows)


def fill_the_disk(server, api):
    """Make the running server's database refuse to grow, as on a full disk, then fill what room
    is left with adds through `api` (a client of the server); returns the answer that found no
    room. SQLite: a page limit on the server's own connection (SQLITE_FULL). PostgreSQL: its
    disk_full error (53100), raised by triggers on the tables a write first fills."""
    store = server.app.state.memory.store
    if hasattr(store, "_conn"):
        with store._lock:
            (pages,) = store._conn.execute("PRAGMA page_count").fetchone()
            store._conn.execute(f"PRAGMA max_page_count = {pages}")
    else:
        import psycopg

        with psycopg.connect(store.url, autocommit=True) as conn:
            conn.execute(
                "CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION"
                " 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$"
            )
            # Citus makes a trigger on a distributed table on every shard only when told this is
            # meant (an unused placeholder on plain PostgreSQL)
            conn.execute("SET citus.enable_unsafe_triggers = on")
            for table in ("facts", "jobs"):
                conn.execute(f"CREATE TRIGGER no_room BEFORE INSERT ON {table} EXECUTE FUNCTION disk_full()")
    for n in range(500):  # the room left in the last pages goes first; then no add fits
        reply = api.post("/v1/memories", json={"text": f"I keep diary {n}: " + "long days " * 190})
        if reply.status_code != 201:
            if hasattr(store, "_conn"):
                _take_the_last_pages(store)
            return reply
    raise AssertionError("the database kept growing")


def _take_the_last_pages(store) -> None:
    """The add that found no room may leave a few free pages, which a smaller write (a turn's
    messages) would still fit in: take them, so that the disk is full for every write."""
    import sqlean

    with store._lock:
        try:
            store._conn.execute("CREATE TABLE IF NOT EXISTS test_disk_filler (b BLOB)")
            while True:
                store._conn.execute("INSERT INTO test_disk_filler VALUES (zeroblob(256))")
        except sqlean.OperationalError as exc:
            assert "full" in str(exc), exc
        try:  # a full leaf splits into two new pages, so one may be left: a new table's root takes it
            for n in range(100):
                store._conn.execute(f"CREATE TABLE test_disk_filler_{n} (b BLOB)")
        except sqlean.OperationalError as exc:
            assert "full" in str(exc), exc


# a Citus setting: a worker's catalog shows its shards (facts_102008, …) to every client
SHOW_SHARDS = "citus.show_shards_for_app_name_prefixes"


@contextmanager
def async_commits_on_a_worker(url: str) -> Iterator[tuple[str, list[str]]]:
    """Inside, the first worker of this Citus database acknowledges its commits before writing
    them (`synchronous_commit = off` for the database there, on its new sessions); yields that
    worker's host:port and the other workers'."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    _, worker, *others = node_urls(url)
    at = [f"{d['host']}:{d['port']}" for d in map(conninfo_to_dict, [worker, *others])]
    with psycopg.connect(worker, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET synchronous_commit = off')
    try:
        yield at[0], at[1:]
    finally:
        with psycopg.connect(worker, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{conn.info.dbname}" RESET synchronous_commit')


def node_urls(url: str) -> list[str]:
    """The connections to this database on every node that holds its rows: the server alone,
    or a Citus coordinator then its workers (as pg_dist_node knows them, with the same
    credentials)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('pg_dist_node')").fetchone() == (None,):
            return [url]
        workers = conn.execute(
            "SELECT nodename, nodeport FROM pg_dist_node"
            " WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY groupid"
        ).fetchall()
    return [url, *(make_conninfo(url, host=host, port=port) for host, port in workers)]


def on_node(url: str, *statements: str) -> list[tuple]:
    """Run `statements` on one node with the URL's powers, a worker's shards in sight; the last
    one's rows."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(f"SET {SHOW_SHARDS} = '*'")
        for statement in statements:
            cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


_RELATION_FILES = (
    "SELECT c.relname, pg_read_binary_file(pg_relation_filepath(c.oid)) FROM pg_class c"
    " WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.relkind IN ('r', 'i', 't')"
    " AND c.relnamespace IN (current_schema()::regnamespace, 'pg_toast'::regnamespace)"
)


def files_holding(urls: list[str], needle: bytes, *maintenance: str) -> list[str]:
    """The tables and indexes whose files hold `needle` on these nodes (node_urls: a Citus
    cluster's workers hold the shards, facts_102008 named facts here), after `maintenance` on
    the first (which a coordinator sends on to the shards) and a checkpoint on each."""
    import re

    first, *others = urls
    on_node(first, *maintenance, "CHECKPOINT")
    for url in others:
        on_node(url, "CHECKPOINT")
    return sorted(
        re.sub(r"_[0-9]+$", "", name)
        for url in urls
        for name, data in on_node(url, _RELATION_FILES)
        if needle in bytes(data)
    )


@contextmanager
def server_clock_back(server, days: int) -> Iterator[None]:
    """A live server's clock `days` back while the body runs (what it adds is said then)."""
    from mnemo.domain import utcnow

    memory = server.app.state.memory
    then, clock = utcnow() - timedelta(days=days), memory.clock
    memory.clock = lambda: then
    try:
        yield
    finally:
        memory.clock = clock
