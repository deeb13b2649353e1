"""The PostgreSQL lexical arm: the common-word list passed in (as shipped) against reading it
from the planner's statistics inside every search (the function migration 1 made), in one
database, the two calls interleaved query by query.

    .venv/bin/python bench/postgres_lexical.py [--users N]   # default 200 x 1,000 facts, ~6 min

Seeds N users x 1,000 facts through bench/postgres.py's seeding (a throwaway server, then
VACUUM ANALYZE), installs migration 1's five-argument mnemo_lexical beside migration 6's
four-argument one, then asks 600 synthetic questions for random users, each through both
(as mnemo_app, with the user set, the SELECT the store sends; the list is read once, as
the store keeps it), alternating which goes first. It prints p50 / p90 / p99 of each (the
first 50 questions are warm-up), the ratio, and for how many questions the two returned the
same facts in the same order. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
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
from bench.recall import Vectors, machine, make_console
from mnemo.providers.embed import LocalEmbedder
from mnemo.store.fulltext import COMMON_TERM_SHARE, SMALL_STORE, query_words
from mnemo.store.migrations.postgres_security import lexical_function
from mnemo.store.rows import FACT_COLUMNS

QUESTIONS, WARMUP = 600, 50
OLD = "mnemo_lexical(%(words)s, NULL, 20, %(share)s, %(small)s)"
NEW = "mnemo_lexical(%(words)s, NULL, 20, %(common)s)"
TAIL = " JOIN facts f ON f.rowid = l.fact_rowid WHERE f.user_id = %(user)s ORDER BY l.score DESC, f.rowid"
CALLS = {
    "statistics read in every search (before)": (f"SELECT {FACT_COLUMNS}, l.score FROM {OLD} l{TAIL}"),
    "common words passed in (shipped)": (f"SELECT {FACT_COLUMNS}, l.score FROM {NEW} l{TAIL}"),
}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def measure(url: str, pairs: list[tuple[str, str]]) -> tuple[dict[str, list[float]], int, int]:
    times: dict[str, list[float]] = {name: [] for name in CALLS}
    same = 0
    with psycopg.connect(url) as conn:
        conn.execute("SET ROLE mnemo_app")
        read = conn.execute("SELECT mnemo_common_words(%s, %s)", (COMMON_TERM_SHARE, SMALL_STORE))
        common = read.fetchone()
        conn.commit()
        params = {"share": COMMON_TERM_SHARE, "small": SMALL_STORE, "common": common[0]}
        for i, (uid, question) in enumerate(pairs):
            p = {**params, "words": query_words(question), "user": uid}
            found = {}
            for name in list(CALLS) if i % 2 else reversed(CALLS):
                t = time.perf_counter()
                conn.execute("SELECT set_config('mnemo.user_id', %s, true)", (uid,))
                found[name] = [r[0] for r in conn.execute(CALLS[name], p).fetchall()]
                conn.commit()
                if i >= WARMUP:
                    times[name].append((time.perf_counter() - t) * 1000)
            same += len({tuple(ids) for ids in found.values()}) == 1
    return times, same, len(common[0])


async def main(users: int) -> None:
    from rich.table import Table

    rng = random.Random(7)
    embedder = LocalEmbedder()
    server = Server(None)
    try:
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
            stores = await open_stores(server, "lex", Path(tmp), backends=("postgres",))
            vectors = Vectors(embedder, False, rng)
            seeded = await seed("lex", stores, users, 1000, vectors, embedder.model_name, rng)
            url = stores["postgres"].url
            await stores["postgres"].close()
            with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
                lexical_function(cur)  # migration 1's function, beside migration 6's
            ids = seeded.users["postgres"]
            pairs = [(rng.choice(ids), q) for q in make_questions(rng, QUESTIONS)]
            times, same, common = measure(url, pairs)
    finally:
        server.close()
    info = machine()
    console = make_console()
    console.print(f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}")
    title = f"PostgreSQL lexical arm, {users:,} users x 1,000 facts, {QUESTIONS - WARMUP} questions"
    table = Table(title=title)
    for col in ("call", "p50 ms", "p90 ms", "p99 ms"):
        table.add_column(col, justify="left" if col == "call" else "right")
    for name, xs in times.items():
        table.add_row(name, *(f"{pct(xs, q):.2f}" for q in (0.5, 0.9, 0.99)))
    console.print(table)
    before, shipped = (pct(xs, 0.5) for xs in times.values())
    console.print(
        f"p50 ratio shipped / before: {shipped / before:.2f}; {common} common words; "
        f"the same facts in the same order for {same} of {QUESTIONS} questions"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=200)
    asyncio.run(main(parser.parse_args().users))
