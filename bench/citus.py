"""mnemo on a Citus cluster (a coordinator and two workers) beside one PostgreSQL, in the same run.

    .venv/bin/python bench/citus.py [--quick] [--json] [--users N] [--big N] [--proxy-only]

Seeding was most of the time while the cluster committed a fact at a time (90-250
facts/s on the 2-core reference machine: `--users 100 --big 100000` took 68
minutes under load); a batch of new facts now goes in a few multi-row statements
(about 2,300 facts/s on the cluster with `--quick`), `--quick` takes about two
minutes.

The servers: one PostgreSQL and a Citus cluster of three (tests/citus_nodes.py:
a coordinator and two workers on loopback, started here, with Citus as the
tests build it, tests/citus_build.py). The single PostgreSQL is a node of the
same kind without workers: the same binaries and the same settings
(durability off, shared_buffers 64 MB, data in memory where /dev/shm allows),
so that the only difference is the distribution. Each store is one database on
each; on the cluster the store's own migrations distribute its tables
(migration 18, Citus's default of 32 shards a table).

What is measured, with bench/postgres.py's seeding, timing and tables (read its
docstring), on the same facts, vectors, times and (user, question) pairs on both:

- recall latency, p50 and p99, first pass and the same pairs again, of the
  1000x1000 store (1,000 users with 1,000 facts: exact scans of one user's
  rows) and the 100k store (one user with 100,000 facts: through the HNSW
  index, built in the background on first search; on Citus, one graph in the
  user's shard); and p50 of each store call a recall makes;
- ingest: facts/s of `commit`, one batch per user, vectors precomputed;
  VACUUM ANALYZE (on every node of the cluster at once); the HNSW build;
  database size (on the cluster, the sum over its nodes);
- the chat proxy's turn throughput, with bench/proxy.py (the scripted
  upstream, mnemo's server with its extraction worker off, one user with
  1,000 facts): turns/s and latency p50/p99 at 8 and 32 concurrent clients,
  non-streamed, with mnemo's store on each database in turn, and the
  deadlocks each database saw (pg_stat_database): on Citus, concurrent
  recalls of one user deadlock writing the recall log (docs/scaling.md).

Ratios are Citus / PostgreSQL: above 1 for a latency, or below 1 for a rate,
the cluster is slower. On one small machine it is: the three nodes share the
same cores, and each routed statement adds the coordinator's planning and a
loopback hop to a worker. docs/scaling.md says what several machines change.

`--quick`: 10 users x 200 facts, a 2,000-fact user searched through HNSW
(both stores get exact_below=1,000, a constructor parameter of PostgresStore),
40 queries, and a short proxy run. `--users` and
`--big` change the two stores' sizes (a mid-size run). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

if __package__ in (None, ""):  # run as a script: make `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import proxy
from bench.postgres import (
    Plan,
    Server,
    arms_table,
    await_indexes,
    build_rows,
    build_table,
    database_size,
    latency,
    measured,
    recall_rows,
    recall_table,
    seed,
    vacuum_analyze,
)
from bench.recall import Vectors, clock, log, machine, make_console
from mnemo.providers.embed import LocalEmbedder
from mnemo.store.postgres import PostgresStore
from tests.citus_nodes import HOST, Nodes
from tests.citus_server import SessionCitus

BACKENDS = ("postgres", "citus")  # the first is the base of every ratio
CLIENTS = (8, 32)


@dataclass
class ProxyPlan:
    facts: int
    requests: int
    seconds: float

    @classmethod
    def make(cls, quick: bool) -> ProxyPlan:
        return cls(100, 30, 30.0) if quick else cls(1000, 400, 20.0)


class Servers:
    """One PostgreSQL (a node without workers) and a Citus cluster (a coordinator, two workers):
    `citus`, or one started here (and stopped with the rest)."""

    def __init__(self, citus: SessionCitus | None = None) -> None:
        self._single = Nodes(workers=0)
        self._own_citus = citus is None
        try:
            port = self._single.coordinator.port
            self.postgres = Server(make_conninfo(host=HOST, port=port, user="postgres"))
            self.citus = citus or SessionCitus()
        except BaseException:
            self._single.stop()
            raise

    def create(self, backend: str, name: str) -> str:
        return self.postgres.create(name) if backend == "postgres" else self.citus.create_database()

    def drop(self, backend: str, url: str) -> None:
        if backend == "postgres":
            self.postgres.drop(url)
        else:
            self.citus.drop_database(url)

    def node_urls(self, backend: str, url: str) -> list[str]:
        """`url`'s database on every node of the backend (the coordinator first)."""
        if backend == "postgres":
            return [url]
        return self.citus.node_urls(str(conninfo_to_dict(url)["dbname"]))

    def size(self, backend: str, url: str) -> int:
        return sum(database_size(u) for u in self.node_urls(backend, url))

    def deadlocks(self, backend: str, url: str) -> int:
        """Deadlocks detected in `url`'s database so far, over every node (pg_stat_database)."""
        query = "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        total = 0
        for u in self.node_urls(backend, url):
            with psycopg.connect(u, autocommit=True) as conn:
                row = conn.execute(query).fetchone()
                total += row[0] if row else 0
        return total

    def vacuum(self, backend: str, url: str) -> float:
        """VACUUM ANALYZE on every node at once (the workers hold the shards); seconds."""
        t = time.perf_counter()
        urls = self.node_urls(backend, url)
        with ThreadPoolExecutor(len(urls)) as pool:
            list(pool.map(vacuum_analyze, urls))
        return time.perf_counter() - t

    def info(self) -> dict:
        out = self.postgres.info()
        workers = len(self.citus.workers)
        out["server"] = f"one node (tests/citus_nodes.py) against a coordinator and {workers} workers"
        return out

    def stop(self) -> None:
        try:
            self.postgres.close()
        finally:
            self._single.stop()
            if self._own_citus:
                self.citus.stop()


def as_url(conninfo: str) -> str:
    """A `postgresql://` URL for a loopback node's conninfo (what MNEMO_DATABASE_URL takes)."""
    c = conninfo_to_dict(conninfo)
    return f"postgresql://{c['user']}@{c['host']}:{c['port']}/{c['dbname']}"


# -- recall and ingest ------------------------------------------------------------


async def bench_store(spec, plan: Plan, servers: Servers, vectors, embedder, rng) -> dict:
    """One store seeded on both backends, its HNSW index built where due, recall timed."""
    name, users, per_user = spec
    urls = {b: servers.create(b, name) for b in BACKENDS}
    stores = {b: PostgresStore(u, clock=clock, exact_below=plan.real_exact_below) for b, u in urls.items()}
    try:
        for store in stores.values():
            await store.open()
        vacuum = {b: (lambda store, b=b: servers.vacuum(b, store.url)) for b in BACKENDS}
        s = await seed(name, stores, users, per_user, vectors, embedder.model_name, rng, vacuum)
        index = await await_indexes(s, BACKENDS, per_user, embedder)
        timings = await latency(s, plan, embedder, rng)
        sizes = {b: servers.size(b, u) for b, u in urls.items()}
        for (b, run), t in timings["rows"].items():  # as it goes: a long run's figures so far
            log(f"{name} {b} {run}: p50 {t.p(50):.2f} ms, p99 {t.p(99):.2f} ms")
    finally:
        for store in stores.values():
            await store.close()
        for b, u in urls.items():
            servers.drop(b, u)
    return measured(s, users, index, sizes, timings)


# -- the proxy ----------------------------------------------------------------------


def bench_proxy(p: ProxyPlan, servers: Servers, seed_: int) -> list[dict]:
    """bench/proxy.py's non-streamed rows at 8 and 32 clients, mnemo's store on each backend;
    each row with the deadlocks its database saw (over both rows)."""
    rows = []
    for backend in BACKENDS:
        url = servers.create(backend, "proxy")
        try:
            args = proxy.options(
                [
                    *("--facts", str(p.facts), "--requests", str(p.requests)),
                    *("--seconds", str(p.seconds), "--seed", str(seed_), "--modes", "plain"),
                    *("--clients", *map(str, CLIENTS), "--database-url", as_url(url)),
                ]
            )
            done = proxy.run(args)
            time.sleep(1)  # the server has stopped: its backends' statistics are published
            deadlocks = servers.deadlocks(backend, url)
            rows += [{"backend": backend, "deadlocks": deadlocks, **r} for r in done]
            log(f"proxy on {backend}: done ({deadlocks} deadlocks)")
        finally:
            servers.drop(backend, url)
    return rows


def proxy_rows(rows: list[dict]) -> list[dict]:
    base = {r["clients"]: r["proxied"] for r in rows if r["backend"] == BACKENDS[0]}
    out = []
    for r in rows:
        p, b = r["proxied"], base[r["clients"]]
        out.append(
            {
                "backend": r["backend"],
                "clients": r["clients"],
                "n": p["n"],
                "errors": p["errors"] + r["direct"]["errors"],
                "turns_per_s": p["per_s"],
                "p50_ms": p["p50"],
                "p99_ms": p["p99"],
                "x_turns_per_s": p["per_s"] / b["per_s"],
                "x_p50": p["p50"] / b["p50"],
                "x_p99": p["p99"] / b["p99"],
                "upstream_p50_ms": r["direct"]["p50"],
                "recalled": p["recalled"],
                "deadlocks": r["deadlocks"],
            }
        )
    return out


# -- output -----------------------------------------------------------------------


def summarise(stores: list[dict], proxied: list[dict]) -> dict:
    arms = [{"store": r["store"], "backend": b, **ms} for r in stores for b, ms in r["arms"].items()]
    return {
        "recall": recall_rows(stores, BACKENDS[0]),
        "arms": arms,
        "build": build_rows(stores, BACKENDS, BACKENDS[0]),
        "proxy": proxy_rows(proxied),
    }


def proxy_table(rows: list[dict], p: ProxyPlan):
    from rich.table import Table

    table = Table(
        title=f"Chat proxy, non-streamed turns (scripted upstream; one user with {p.facts:,} facts; "
        f"up to {p.requests} timed turns or {p.seconds:.0f} s a row; x = Citus / PostgreSQL; "
        "deadlocks: pg_stat_database, all nodes, over both rows)"
    )
    cols = ("backend", "clients", "turns", "turns/s", "x turns/s", "p50 ms", "p99 ms", "x p50", "x p99")
    for col in (*cols, "upstream p50 ms", "errors", "deadlocks"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    for r in rows:
        base = r["backend"] == BACKENDS[0]
        table.add_row(
            r["backend"],
            str(r["clients"]),
            str(r["n"]),
            f"{r['turns_per_s']:.1f}",
            "" if base else f"{r['x_turns_per_s']:.2f}",
            f"{r['p50_ms']:.1f}",
            f"{r['p99_ms']:.1f}",
            "" if base else f"{r['x_p50']:.2f}",
            "" if base else f"{r['x_p99']:.2f}",
            f"{r['upstream_p50_ms']:.1f}",
            str(r["errors"]),
            str(r["deadlocks"]),
        )
    return table


def render(summary: dict, plan: Plan, p: ProxyPlan, info: dict, pg: dict) -> None:
    console = make_console()
    console.print(
        f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}; load average "
        f"(1, 5, 15 min) {'/'.join(f'{x:.1f}' for x in info['load_before'])} before, "
        f"{'/'.join(f'{x:.1f}' for x in info['load_after'])} after"
    )
    settings = ", ".join(f"{k} {v}" for k, v in pg["settings"].items())
    console.print(f"PostgreSQL {pg['version']}, pgvector {pg['pgvector']}, {pg['server']}: {settings}")
    console.print(proxy_table(summary["proxy"], p))
    title = (
        f"Recall latency, query embedding excluded ({plan.queries} random (user, question) pairs "
        f"after {plan.warmup} warm-up; x = Citus / PostgreSQL)"
    )
    console.print(recall_table(summary["recall"], title, BACKENDS[0]))
    console.print(arms_table(summary["arms"]))
    title = "Ingest: seeding through commit (vectors precomputed; x = Citus / PostgreSQL)"
    console.print(build_table(summary["build"], title, BACKENDS[0]))


# -- main -------------------------------------------------------------------------


def make_plan(args: argparse.Namespace) -> Plan:
    plan = Plan.make(args.quick, args.seed)
    if args.quick:  # smaller than bench/postgres.py's: Citus commits several times slower
        plan.stores, plan.queries, plan.warmup = [("10x200", 10, 200), ("2k", 1, 2000)], 40, 5
    (many, users, per_user), (big, _, facts) = plan.stores
    if args.users:
        many, users = f"{args.users}x{per_user}", args.users
    if args.big:
        big, facts = f"{args.big / 1000:g}k", args.big
    plan.stores = [(many, users, per_user), (big, 1, facts)]
    return plan


async def recall_part(plan: Plan, servers: Servers) -> list[dict]:
    rng = random.Random(plan.seed)
    embedder = LocalEmbedder()
    embedder.embed_sync(["warm up the model"])
    vectors = Vectors(embedder, False, rng)
    return [await bench_store(s, plan, servers, vectors, embedder, rng) for s in plan.stores]


def main(args: argparse.Namespace) -> dict:
    plan, p = make_plan(args), ProxyPlan.make(args.quick)
    load = os.getloadavg()  # the machine may be shared: its load, before and after
    servers = Servers()
    try:
        pg = servers.info()
        proxied = bench_proxy(p, servers, plan.seed)
        stores = [] if args.proxy_only else asyncio.run(recall_part(plan, servers))
    finally:
        servers.stop()
    info = {**machine(), "load_before": load, "load_after": os.getloadavg()}
    summary = summarise(stores, proxied)
    render(summary, plan, p, info, pg)
    return {"machine": info, "postgres": pg, "plan": plan.__dict__, "proxy_plan": p.__dict__, **summary}


def cli(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 x 500 and 5k stores, a short proxy run")
    parser.add_argument("--users", type=int, help="users of the many-users store (1,000; --quick 20)")
    parser.add_argument("--big", type=int, help="facts of the one big user (100,000; --quick 5,000)")
    parser.add_argument("--proxy-only", action="store_true", help="the proxy's rows alone")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    t = time.perf_counter()
    out = main(args)
    out["wall_s"] = time.perf_counter() - t
    log(f"done in {out['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out, default=str))
    return out


if __name__ == "__main__":
    cli()
