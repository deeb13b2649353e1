"""The SQLite store's own costs, without embedding or fusion: commits and each recall arm.

    .venv/bin/python bench/store_ops.py [--json]

On one user's store of 10,000 facts (random unit vectors, no model): commits of
3,000 facts in batches of 100 and of 1,000, 100 single-fact commits, and the
median of 60 calls of each arm (recent, pinned, nearest, lexical) and of a
fact by id. It measures one source tree; to compare two (before and after a
change), run it from each in turn, alternating, as

    PYTHONPATH=OTHER_TREE/src .venv/bin/python bench/store_ops.py

The figures are only comparable within one machine and one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.domain import Change, Scope, Source, SourceKind, utcnow
from mnemo.store.sqlite import SQLiteStore
from mnemo.write import changes

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def facts(scope: Scope, n: int, tag: str, rng: np.random.Generator) -> list[Change]:
    now = utcnow()
    out = []
    for i in range(n):
        v = rng.standard_normal(384).astype(np.float32)
        text = f"I like {WORDS[i % 12]} and {WORDS[(i * 7) % 12]}, {tag} {i}"
        fact = changes.new_fact(
            scope, text, now=now - timedelta(minutes=i), source=Source(SourceKind.IMPORT), embedding_model="m"
        )
        out.append(changes.create(fact, v / np.linalg.norm(v), "import"))
    return out


async def median_ms(call: Callable[[], Awaitable[Any]], n: int = 60) -> float:
    for _ in range(5):
        await call()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def run() -> dict[str, float]:
    store = SQLiteStore(Path(tempfile.mkdtemp()) / "mnemo.db")
    await store.open()
    user = await store.ensure_user("alice")
    scope, rng, out = Scope(user.id), np.random.default_rng(7), {}
    for size in (100, 1000):
        batch = facts(scope, 3000, f"batch{size}", rng)
        start = time.perf_counter()
        for i in range(0, len(batch), size):
            await store.commit(user.id, batch[i : i + size], utcnow())
        out[f"commit_per_s_batches_of_{size}"] = len(batch) / (time.perf_counter() - start)
    singles = facts(scope, 100, "single", rng)
    start = time.perf_counter()
    for change in singles:
        await store.commit(user.id, [change], utcnow())
    out["single_commit_ms"] = (time.perf_counter() - start) / len(singles) * 1000
    await store.commit(user.id, facts(scope, 10_000 - 6_100, "fill", rng), utcnow())
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    since = utcnow() - timedelta(days=7)
    arms: dict[str, Callable[[], Awaitable[Any]]] = {
        "recent": lambda: store.recent(scope, since, 10),
        "pinned": lambda: store.pinned(scope),
        "nearest": lambda: store.nearest(scope, query, "m", 20),
        "lexical": lambda: store.lexical(scope, "what about gamma and theta", 20),
        "get_fact": lambda: store.get_fact(scope, singles[50].fact.id),
    }
    for name, call in arms.items():
        out[f"{name}_p50_ms"] = await median_ms(call)
    await store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    out = asyncio.run(run())
    for name, value in out.items():
        print(f"{name:32s} {value:10.3f}")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
