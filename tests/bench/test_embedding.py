"""bench/embedding.py on a few texts: one process a bound, each measured and printed."""

from __future__ import annotations

import json

from tests.bench import run_bench


def test_it_measures_each_bound_in_a_process_of_its_own():
    done = run_bench("embedding.py", "--texts", "24", "--budgets", "64", "0", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["texts"] == 24 and [r["tokens_per_run"] for r in out["rows"]] == [64, None]
    for row in out["rows"]:
        assert row["mixed_texts_per_s"] > 0 and row["short_texts_per_s"] > 0 and row["question_p50_ms"] > 0
        assert row["peak_mib"] >= row["loaded_mib"] > 0
    assert "| 64 |" in done.stdout and "| no bound |" in done.stdout
