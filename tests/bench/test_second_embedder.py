"""bench/second_embedder.py on a small store: the second model's vectors filled in and counted,
recall timed with it and without, the ratio printed."""

from __future__ import annotations

import json

from tests.bench import run_bench


def test_it_fills_in_every_facts_second_vector_and_times_recall_with_and_without():
    done = run_bench("second_embedder.py", "--facts", "120", "--queries", "4", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["facts"] == 120 and out["fill"]["second_facts_per_s"] > 0
    assert "filled in 120 vectors" in done.stderr
    assert set(out["recall"]) == {"one embedder", "with the second"}
    assert out["ratio_p50"] > 0 and "with / without: p50" in done.stdout
