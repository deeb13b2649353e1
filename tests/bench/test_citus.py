"""bench/citus.py's pieces at a small scale, on one PostgreSQL and the test session's Citus cluster:
the same facts and (user, question) pairs on both, the HNSW index built on both, the proxy's
turns on both; what comes out is checked for shape and sense, never for speed."""

from __future__ import annotations

import asyncio
import random
from argparse import Namespace

import numpy as np
import pytest

from bench.citus import BACKENDS, ProxyPlan, Servers, bench_proxy, bench_store, make_plan, summarise

pytestmark = [pytest.mark.citus, pytest.mark.slow]


@pytest.fixture(scope="module")
def servers(citus):
    started = Servers(citus)
    yield started
    started.stop()


def random_vectors(dims: int, rng: np.random.Generator):
    """Unit vectors for facts (the bench's pool of real embeddings takes a minute to make)."""

    def vectors(facts) -> np.ndarray:
        v = rng.standard_normal((len(facts), dims)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    return vectors


def test_recall_and_ingest_are_measured_alike_on_both_backends(servers, embedder):
    plan = make_plan(Namespace(quick=True, seed=7, users=3, big=1200))
    plan.queries, plan.warmup = 20, 2
    assert plan.stores == [("3x200", 3, 200), ("1.2k", 1, 1200)]
    assert plan.real_exact_below == 1000  # so the big user goes through the HNSW index
    vectors = random_vectors(embedder.dimensions, np.random.default_rng(7))
    rng = random.Random(plan.seed)

    async def run() -> list[dict]:
        return [await bench_store(s, plan, servers, vectors, embedder, rng) for s in plan.stores]

    summary = summarise(asyncio.run(run()), [])

    recall = {(r["store"], r["backend"], r["pass"]): r for r in summary["recall"]}
    assert set(recall) == {
        (store, backend, run)
        for store in ("3x200", "1.2k")
        for backend in BACKENDS
        for run in ("first pass", "again")
    }
    for (store, _backend, run), r in recall.items():
        assert r["n"] == 20
        assert 0 < r["p50_ms"] <= r["p99_ms"]
        base = recall[(store, "postgres", run)]
        # the same facts and pairs: as many facts recalled on the cluster as on one server
        assert r["mean_hits"] == base["mean_hits"] > 0
        assert r["x_p50"] == pytest.approx(r["p50_ms"] / base["p50_ms"])
    assert {(r["store"], r["backend"]) for r in summary["arms"]} == {
        (s, b) for s in ("3x200", "1.2k") for b in BACKENDS
    }

    build = {(r["store"], r["backend"]): r for r in summary["build"]}
    for (store, backend), r in build.items():
        assert r["facts"] == {"3x200": 600, "1.2k": 1200}[store]
        assert r["commit_per_s"] > 0 and r["db_bytes"] > 0 and r["vacuum_s"] > 0
        # the HNSW index: built for the big user only, on each backend
        assert (r["index_s"] is not None) == (store == "1.2k"), (store, backend)
        assert r["x_commit"] == pytest.approx(r["commit_per_s"] / build[(store, "postgres")]["commit_per_s"])


def test_the_proxy_turns_are_timed_on_both_backends(servers):
    rows = bench_proxy(ProxyPlan(facts=50, requests=10, seconds=60), servers, 7)
    proxy = summarise([], rows)["proxy"]

    assert [(r["backend"], r["clients"]) for r in proxy] == [
        ("postgres", 8),
        ("postgres", 32),
        ("citus", 8),
        ("citus", 32),
    ]
    for r in proxy:
        assert r["n"] == 10 and r["errors"] == 0, r
        assert r["turns_per_s"] > 0 and 0 < r["p50_ms"] <= r["p99_ms"]
        assert r["recalled"] > 0  # recall ran: the seeded facts were found and injected
        assert isinstance(r["deadlocks"], int) and r["deadlocks"] >= 0
    # one PostgreSQL takes the same load without any
    assert [r["deadlocks"] for r in proxy if r["backend"] == "postgres"] == [0, 0]
