"""The PostgreSQL lexical arm as shipped against migration 19's, in one database, the two calls
interleaved question by question, on many small users and on one large one.

    .venv/bin/python bench/postgres_lexical.py [--users N] [--big N] [--json]   # ~6 min; --quick ~1 min

Seeds N users x 1,000 facts (default 200) and, in a database of its own, one user with --big
facts (default 100,000), through bench/postgres.py's seeding (a throwaway server, then VACUUM
ANALYZE). Migration 19's search is created beside the shipped one (migration 27's) under
another name; both are then asked the same questions for random users (as mnemo_app, with
the user set, 40 results as the learned ranker asks), alternating which goes first. It
prints p50 / p90 / p99 of each per store (the first questions are warm-up), the ratio, and
for how many questions the two returned the same facts in the same order. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import psycopg

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import make_questions
from bench.postgres import Server, open_stores, seed
from bench.recall import Vectors, log, machine, make_console
from mnemo.providers.embed import LocalEmbedder
from mnemo.store.fulltext import COMMON_TERM_SHARE, SMALL_STORE, query_words
from mnemo.store.migrations.postgres import APP_ROLE
from mnemo.store.migrations.postgres_security import definer, routed_lexical_sql

BEFORE = "bench_lexical_19"
ARGS = "%(user)s, %(words)s, NULL, %(k)s, %(share)s, %(small)s"
CALLS = {
    "migration 19: every match read, then the common words dropped": f"SELECT * FROM {BEFORE}({ARGS})",
    "migration 27: each word alone, or a small store read once": f"SELECT * FROM mnemo_lexical({ARGS})",
}
K = 40


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def measure(url: str, pairs: list[tuple[str, str]], warmup: int) -> dict:
    times: dict[str, list[float]] = {name: [] for name in CALLS}
    same = 0
    with psycopg.connect(url) as conn:
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.commit()
        params = {"share": COMMON_TERM_SHARE, "small": SMALL_STORE, "k": K}
        for i, (uid, question) in enumerate(pairs):
            p = {**params, "words": query_words(question), "user": uid}
            found = {}
            for name in list(CALLS) if i % 2 else reversed(CALLS):
                t = time.perf_counter()
                conn.execute("SELECT set_config('mnemo.user_id', %s, true)", (uid,))
                found[name] = conn.execute(CALLS[name], p).fetchall()
                conn.commit()
                if i >= warmup:
                    times[name].append((time.perf_counter() - t) * 1000)
            rows = list(found.values())
            same += [r for r, _ in rows[0]] == [r for r, _ in rows[1]]
    return {
        "questions": len(pairs) - warmup,
        "same_order": same,
        "asked": len(pairs),
        "calls": {
            name: {f"p{int(q * 100)}": pct(xs, q) for q in (0.5, 0.9, 0.99)} for name, xs in times.items()
        },
    }


async def bench_store(
    server: Server,
    embedder: LocalEmbedder,
    name: str,
    users: int,
    per_user: int,
    questions: int,
    rng,
    tmp: Path,
) -> dict:
    stores = await open_stores(server, name, tmp, backends=("postgres",))
    try:
        vectors = Vectors(embedder, False, rng)
        seeded = await seed(name, stores, users, per_user, vectors, embedder.model_name, rng)
        url = stores["postgres"].url
        with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(routed_lexical_sql(BEFORE))
            definer(cur, f"{BEFORE}(text, text[], text[], integer, double precision, bigint)")
        ids = seeded.users["postgres"]
        pairs = [(rng.choice(ids), q) for q in make_questions(rng, questions)]
        log(f"{name}: asking {questions} questions through both")
        out = measure(url, pairs, warmup=max(5, questions // 12))
    finally:
        await stores["postgres"].close()
        server.drop(stores["postgres"].url)
    return {"store": name, "users": users, "facts_per_user": per_user, **out}


async def main(args: argparse.Namespace) -> dict:
    rng = random.Random(7)
    users, big, questions = (20, 5000, 120) if args.quick else (args.users, args.big, 600)
    embedder = LocalEmbedder()
    server = Server(None)
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
            results = [
                await bench_store(server, embedder, f"{users}x1000", users, 1000, questions, rng, Path(tmp)),
                await bench_store(server, embedder, f"1x{big}", 1, big, questions, rng, Path(tmp)),
            ]
    finally:
        server.close()
    return {"machine": machine(), "results": results, "wall_s": time.perf_counter() - started}


def render(summary: dict) -> None:
    from rich.table import Table

    info = summary["machine"]
    console = make_console()
    console.print(f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}")
    for r in summary["results"]:
        table = Table(
            title=f"PostgreSQL lexical arm, {r['store']} facts, {r['questions']} questions, k = {K}"
        )
        for col in ("call", "p50 ms", "p90 ms", "p99 ms"):
            table.add_column(col, justify="left" if col == "call" else "right")
        for name, qs in r["calls"].items():
            table.add_row(name, *(f"{v:.2f}" for v in qs.values()))
        console.print(table)
        before, shipped = (c["p50"] for c in r["calls"].values())
        console.print(
            f"p50 shipped / migration 19: {shipped / before:.2f}; the same facts in the same order"
            f" for {r['same_order']} of {r['asked']} questions"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=200, help="users of 1,000 facts (default 200)")
    parser.add_argument("--big", type=int, default=100_000, help="the large user's facts (default 100,000)")
    parser.add_argument("--quick", action="store_true", help="20 users, one of 5,000 facts, 120 questions")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parsed = parser.parse_args()
    summary = asyncio.run(main(parsed))
    render(summary)
    if parsed.json:
        print(json.dumps(summary))
