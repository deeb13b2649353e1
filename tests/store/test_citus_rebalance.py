"""A worker added to the Citus cluster and the shards rebalanced onto it while mnemo is written
to: every acknowledged write is there once afterwards, and every user's event chain verifies.

The load goes through mnemo's own API (Memory over the PostgreSQL store on the
coordinator, and two job workers): for each of a dozen users or more (two at
least on each shard), facts added, edited, retracted and purged, and turns
submitted that the workers learn from. A write that fails fails the test.
While it runs, a third worker node is started, given the test's database, added
(`citus_add_node`) and the shards rebalanced (`citus_rebalance_start`, then
`citus_rebalance_wait`), as docs/scaling.md tells an operator to. The moves use
Citus's default transfer, logical replication, which lets the moved shards be
written to while they are copied: it needs `wal_level = logical` on every node
(tests/citus_nodes.py) and a primary key on every table (every table of mnemo's
has one). Every node commits with `synchronous_commit` at its default: under
`off` a write acknowledged just before a shard's switch can be missing from
the moved shard (docs/scaling.md), and this test lost writes in about one run
in four when its cluster ran so; the test checks the setting as the docs ask
an operator to.

Afterwards everything is read back through the coordinator and compared with
what the load was told had happened (`Ledger`, checked by `problems`), and the
users whose shards moved are shown to be on the new node, all their rows there.
No job's attempt may fail either: a turn is learnt at its first attempt, shards
moving or not. (Before migration 19 the lexical search ran on every shard, in
steps that read the user's fact count and the matches at different moments,
and an attempt could fail on a negative logarithm in its BM25 while shards
moved; routed to one shard, the search reads both in one snapshot.) The last
worker runs an hour ahead so that a turn whose claim waits out its lease is
learnt too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import psycopg
import pytest

from mnemo.build import Core
from mnemo.domain import Action, Fact, JobStatus, Scope, Status, Turn, utcnow
from mnemo.memory import Memory
from mnemo.store.migrations.postgres_citus import DISTRIBUTED_TABLES, REFERENCE_TABLES
from mnemo.store.postgres import PostgresStore
from tests.citus_nodes import HOST, Node, Nodes
from tests.helpers import raw_sql

pytestmark = [pytest.mark.backend("citus"), pytest.mark.citus, pytest.mark.slow]

USERS = 12
LATER = timedelta(hours=1)  # past any job's retry or lease
MOST_STEPS = 120  # a user's steps at most: the load stops well before, once the shards have moved
WORDS = ["kayak", "violin", "orchard", "lantern", "glacier", "pottery", "falcon", "harbour", "meadow"]

# the databases a node added to the cluster must have: Citus sends the node the objects it records,
# among them the database it was set up in (here the template the test's database was copied from)
RECORDED_DATABASES = (
    "SELECT d.datname FROM pg_dist_object o JOIN pg_database d ON d.oid = o.objid"
    " WHERE o.classid = 'pg_database'::regclass"
)
# how many of the distributed tables' shards holding this user's rows are on the node of this port
USER_PLACEMENTS_ON = (
    "SELECT count(*) FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)"
    " JOIN pg_dist_node n USING (groupid) JOIN pg_dist_partition d USING (logicalrelid)"
    " WHERE d.partmethod = 'h' AND s.shardid = get_shard_id_for_distribution_column(s.logicalrelid, %s::text)"
    " AND n.nodeport = %s"
)
# how many rows of a distributed table are on the node of this port
ON_NODE = (
    "SELECT coalesce(sum(result::bigint), 0) FROM run_command_on_placements(%s, 'SELECT count(*) FROM %%s')"
    " WHERE nodeport = %s"
)
# the distributed tables the load writes to: all but these
WRITTEN = set(DISTRIBUTED_TABLES) - {
    "api_keys",
    "backfill_progress",
    "recalls",
    "token_usage",
    "token_budgets",
}


@dataclass
class Ledger:
    """What the load was told it had done, for one user."""

    user_id: str
    facts: dict[str, Fact] = field(default_factory=dict)  # each fact as its last write returned it
    events: Counter[tuple[str, Action]] = field(default_factory=Counter)
    turns: dict[str, tuple[str, tuple[str, ...], str]] = field(default_factory=dict)
    receipts: set[str] = field(default_factory=set)
    acknowledged: list[float] = field(default_factory=list)  # when each write returned
    moving: int = 0  # how many of them while the shards moved

    def wrote(self, fact: Fact, action: Action) -> None:
        self.facts[fact.id] = fact
        self.events[fact.id, action] += 1
        self.acknowledged.append(time.monotonic())


async def problems(memory: Memory, ledger: Ledger) -> list[str]:
    """How the user's stored rows differ from the ledger: facts, their events, turns, their
    messages and jobs, receipts and the chain; empty when every acknowledged write is there once."""
    user = ledger.user_id
    found: list[str] = []
    facts = await memory.list(Scope(user, all_agents=True), statuses=None, limit=100_000)
    ids = Counter(f.id for f in facts)
    found += [f"fact {i} is there {n} times" for i, n in ids.items() if n > 1]
    stored = {f.id: f for f in facts}
    for fact_id, fact in ledger.facts.items():
        now = stored.pop(fact_id, None)
        if now is None:
            found.append(f"fact {fact_id} ({fact.text!r}) is missing")
        elif (now.text, now.status, now.purged, now.version) != (
            fact.text,
            fact.status,
            fact.purged,
            fact.version,
        ):
            found.append(f"fact {fact_id} is {now!r}, not {fact!r} as its last write returned")
    # the rest were learnt from the turns, each once, from its own conversation
    learnt = Counter((f.text, f.source.conversation_id) for f in stored.values())
    expected: Counter[tuple[str, str | None]] = Counter(
        (text, conversation) for conversation, _, text in ledger.turns.values()
    )
    if learnt != expected:
        found.append(f"learnt facts {dict(learnt - expected)} and not {dict(expected - learnt)}")
    events = await memory.events(user)
    found += [f"event {s} is there {n} times" for s, n in Counter(e.seq for e in events).items() if n > 1]
    wanted = ledger.events + Counter((f.id, Action.CREATE) for f in stored.values())
    had = Counter((e.fact_id, e.action) for e in events)
    if had != wanted:
        found.append(f"events {dict(had - wanted)} that no write made, {dict(wanted - had)} missing")
    report = await memory.verify_audit(user)
    if not report.ok:
        found.append(f"the event chain does not verify: {report}")
    jobs = {j.id: j for j in await memory.jobs(user, limit=100_000)}
    if set(jobs) != set(ledger.turns):
        found.append(f"jobs {set(jobs) ^ set(ledger.turns)} differ from the turns submitted")
    for job_id, (conversation, message_ids, _) in ledger.turns.items():
        said = [m.id for m in await memory.messages(user, conversation)]
        if said != list(message_ids):
            found.append(f"conversation {conversation} holds messages {said}, not {list(message_ids)}")
        job = jobs.get(job_id)
        if job is not None and (job.status, (job.result or {}).get("events")) != (JobStatus.WAITING, 1):
            found.append(
                f"job {job_id} is {job.status} after {job.attempts} attempts with {job.result},"
                f" not learnt once: {job.last_error}"
            )
    receipts = {r.id for r in await memory.receipts(user, limit=100_000)}
    if receipts != ledger.receipts:
        found.append(f"receipts {receipts ^ ledger.receipts} differ from the purges")
    return found


async def counts_disagree(store: PostgresStore) -> list[tuple]:
    """Users whose counts of active facts or of vectors (per model) differ from their rows."""
    return await raw_sql(
        store,
        "SELECT 'facts', user_id, NULL, c.active, f.n FROM fact_counts c FULL JOIN"
        " (SELECT user_id, count(*) AS n FROM facts WHERE status = 'active' AND NOT purged GROUP BY 1) f"
        " USING (user_id) WHERE c.active IS DISTINCT FROM f.n AND (c.active <> 0 OR f.n IS NOT NULL)"
        " UNION ALL SELECT 'vectors', user_id, model, c.n, v.n FROM vector_counts c FULL JOIN"
        " (SELECT user_id, model, count(*) AS n FROM fact_vectors GROUP BY 1, 2) v USING (user_id, model)"
        " WHERE c.n IS DISTINCT FROM v.n AND (c.n <> 0 OR v.n IS NOT NULL)",
    )


async def write(memory: Memory, ledger: Ledger, stop: asyncio.Event, name: str) -> None:
    """One user's steps until `stop` (four at least, one of each kind): add a fact each step, and
    in turn submit a turn for the workers to learn from, edit, retract or purge an earlier fact."""
    scope = Scope(ledger.user_id)
    kept: list[str] = []  # the active facts this writer added
    for step in range(MOST_STEPS):
        if stop.is_set() and step >= 4:
            return
        text = f"{name} keeps a {WORDS[step % len(WORDS)]} numbered {step}"
        fact = await memory.add(scope, text)
        ledger.wrote(fact, Action.CREATE)
        kept.append(fact.id)
        if step % 4 == 0:
            said = f"I rode the {WORDS[step % len(WORDS)]} tram on day {step} with {name}"
            job = await memory.submit(
                Turn.of(scope, ("user", f"Remember that {said}"), ("assistant", "Noted.")),
                memory_on=True,
            )
            assert job is not None
            ledger.turns[job.id] = (job.conversation_id, job.message_ids, said)
            ledger.acknowledged.append(time.monotonic())
        elif step % 4 == 1:
            edited = await memory.edit(scope, kept[-2], f"{text}, repainted blue")
            ledger.wrote(edited, Action.EDIT)
        elif step % 4 == 2:
            ledger.wrote(await memory.retract(scope, kept.pop(0)), Action.RETRACT)
        else:
            purged, receipt = await memory.purge(scope, kept.pop(0))
            ledger.wrote(purged, Action.PURGE)
            ledger.receipts.add(receipt.id)


@pytest.fixture
def new_node() -> Iterator[Node]:
    """A PostgreSQL with Citus of its own (the coordinator of a cluster without workers), to add
    to the test's cluster as a third worker; stopped and removed afterwards."""
    nodes = Nodes(workers=0)
    yield nodes.coordinator
    nodes.stop()


@pytest.fixture
def cluster(new_node, citus_store_url) -> tuple[str, Node]:
    """The test's migrated database and the node to add to it, started first so that it stops
    after the database is emptied and dropped (a database whose nodes changed is never handed to
    another test: tests/citus_server.py)."""
    return citus_store_url, new_node


async def add_node(admin: psycopg.AsyncConnection, node: Node) -> None:
    """What an operator runs to add a worker: the database and the `citus` extension on the node,
    then `citus_add_node` on the coordinator (which copies roles, extensions and reference
    metadata to it)."""
    name = admin.info.dbname
    recorded = await (await admin.execute(RECORDED_DATABASES)).fetchall()
    async with await psycopg.AsyncConnection.connect(
        host=HOST, port=node.port, user="postgres", autocommit=True
    ) as conn:
        for database in {name, *(d for (d,) in recorded)}:
            await conn.execute(f'CREATE DATABASE "{database}"')
    async with await psycopg.AsyncConnection.connect(
        host=HOST, port=node.port, user="postgres", dbname=name, autocommit=True
    ) as conn:
        await conn.execute("CREATE EXTENSION citus")
    await admin.execute("SELECT citus_add_node(%s, %s)", (HOST, node.port))


async def row(conn: psycopg.AsyncConnection, sql: str, params: tuple = ()) -> tuple:
    found = await (await conn.execute(sql, params)).fetchone()
    assert found is not None, sql
    return found


async def people(memory: Memory, admin: psycopg.AsyncConnection) -> list[str]:
    """USERS users or more, made until each shard of `facts` holds two of them: whichever shards
    move, some users move with them."""
    (shards,) = await row(admin, "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'facts'::regclass")
    held: Counter[int] = Counter()
    users: list[str] = []
    while len(users) < USERS or len(held) < shards or min(held.values()) < 2:
        assert len(users) < 10 * USERS, f"users spread over shards {held} only"
        user = await memory.accounts.user(f"person{len(users)}")
        shard = await row(admin, "SELECT get_shard_id_for_distribution_column('facts', %s::text)", (user.id,))
        held[shard[0]] += 1
        users.append(user.id)
    return users


async def rebalance_under_load(core: Core, admin: psycopg.AsyncConnection, node: Node) -> list[Ledger]:
    """Every user writing and two job workers learning, while the node is added and the shards
    rebalanced onto it; then the turns queued last are learnt. Each ledger's `moving` counts the
    writes acknowledged between the node's addition and the rebalance's end."""
    ledgers = [Ledger(user) for user in await people(core.memory, admin)]
    stop, workers_stop = asyncio.Event(), asyncio.Event()
    workers = [asyncio.create_task(core.worker(poll=0.05).run(workers_stop)) for _ in range(2)]
    writers = [
        asyncio.create_task(write(core.memory, ledger, stop, f"person{i}"))
        for i, ledger in enumerate(ledgers)
    ]
    await asyncio.sleep(1)  # the load is under way
    began = time.monotonic()
    await add_node(admin, node)
    await admin.execute("SELECT citus_rebalance_start()")
    await admin.execute("SELECT citus_rebalance_wait()")
    ended = time.monotonic()
    await asyncio.sleep(1)  # and goes on a while on the new layout
    stop.set()
    await asyncio.gather(*writers)  # a write that failed fails the test here
    workers_stop.set()
    await asyncio.gather(*workers)
    # the turns queued last, and any whose claim waits out its lease: a worker an hour ahead
    # takes them all now
    await core.worker(clock=lambda: utcnow() + LATER).drain()
    for ledger in ledgers:
        ledger.moving = sum(began <= t <= ended for t in ledger.acknowledged)
    print(f"adding the node and rebalancing took {ended - began:.1f} s")
    return ledgers


async def test_adding_a_worker_and_rebalancing_under_load_loses_and_doubles_nothing(
    cluster, embedder, settings, caplog
):
    for logger in ("mnemo.batch.jobs", "mnemo.write.writer"):  # why a job's attempt failed, if one did
        caplog.set_level(logging.DEBUG, logger)
    url, node = cluster
    store = PostgresStore(url, max_size=USERS + 4)
    await store.open()
    core = Core(store, embedder, None, settings=settings)
    memory = core.memory
    admin = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        # the check docs/scaling.md asks for before a rebalance
        settings_on = await admin.execute(
            "SELECT nodename, nodeport, result FROM run_command_on_workers('SHOW synchronous_commit')"
        )
        assert [r for r in await settings_on.fetchall() if r[2] == "off"] == []
        ledgers = await rebalance_under_load(core, admin, node)

        status = await (await admin.execute("SELECT state FROM citus_rebalance_status()")).fetchall()
        assert status == [("finished",)]
        # the new node holds a copy of every reference table and shards of every other table
        placed = await admin.execute(
            "SELECT DISTINCT table_name::text FROM citus_shards WHERE nodeport = %s", (node.port,)
        )
        assert {t for (t,) in await placed.fetchall()} == {*DISTRIBUTED_TABLES, *REFERENCE_TABLES}
        assert sum(ledger.moving for ledger in ledgers) > 0, "no write was acknowledged during the move"

        found = [p for ledger in ledgers for p in await problems(memory, ledger)]
        assert found == [], "\n".join(found)
        assert await counts_disagree(store) == []
        for ledger in ledgers:  # recall still finds each user's newest active fact
            newest = max(
                (f for f in ledger.facts.values() if f.status == Status.ACTIVE), key=lambda f: f.created_at
            )
            hits = await memory.recall(newest.text, Scope(ledger.user_id), limit=20)
            assert newest.id in [h.fact.id for h in hits], newest.text

        # a moved user's shards of every table are on the new node, and only moved users' rows
        moved = []
        for ledger in ledgers:
            (shards,) = await row(admin, USER_PLACEMENTS_ON, (ledger.user_id, node.port))
            assert shards in (0, len(DISTRIBUTED_TABLES)), (ledger.user_id, shards)
            moved += [ledger.user_id] if shards else []
        assert moved, "no user's shards moved to the new node"
        holding = set()
        for table in DISTRIBUTED_TABLES:
            there = await row(admin, ON_NODE, (table, node.port))
            theirs = await row(admin, f"SELECT count(*) FROM {table} WHERE user_id = ANY(%s)", (moved,))
            assert there == theirs, table
            holding |= {table} if theirs[0] else set()
        assert holding == WRITTEN
        # a failed attempt is logged at DEBUG with its exception, a parked job at WARNING
        failed = [r.getMessage() for r in caplog.records if r.levelno != logging.INFO]
        assert failed == [], "job attempts failed"
        writes = sum(len(ledger.acknowledged) for ledger in ledgers)
        print(
            f"{writes} writes acknowledged, {sum(ledger.moving for ledger in ledgers)} while the shards"
            f" moved ({min(len(ledger.acknowledged) for ledger in ledgers)} by the user with fewest);"
            f" {len(moved)} of {len(ledgers)} users moved"
        )
    finally:
        await admin.close()
        await store.close()


async def test_the_check_finds_a_lost_row_and_one_no_write_made(citus_store_url, embedder, settings):
    store = PostgresStore(citus_store_url, max_size=4)
    await store.open()
    memory = Core(store, embedder, None, settings=settings).memory
    try:
        user = await memory.accounts.user("checked")
        ledger = Ledger(user.id)
        kept = await memory.add(Scope(user.id), "I keep bees on my balcony")
        ledger.wrote(kept, Action.CREATE)
        lost = await memory.add(Scope(user.id), "I play the oboe")
        ledger.wrote(lost, Action.CREATE)
        assert await problems(memory, ledger) == []

        # a write the ledger never heard of, as a write applied twice would leave
        await memory.add(Scope(user.id), "I am allergic to penicillin")
        async with await psycopg.AsyncConnection.connect(citus_store_url) as conn, conn.transaction():
            # the row and its event, behind the store's back: as a replica, the log's trigger and
            # the foreign keys are off (on the workers too)
            await conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            await conn.execute("SET LOCAL session_replication_role = replica")
            await conn.execute("DELETE FROM fact_events WHERE fact_id = %s", (lost.id,))
            await conn.execute("DELETE FROM facts WHERE id = %s", (lost.id,))
        found = await problems(memory, ledger)
        assert f"fact {lost.id} ('I play the oboe') is missing" in found
        assert any("learnt facts {('I am allergic to penicillin', None): 1}" in p for p in found), found
        assert any(f"('{lost.id}', <Action.CREATE: 'create'>): 1}} missing" in p for p in found), found
        assert await counts_disagree(store) != []
    finally:
        await store.close()
