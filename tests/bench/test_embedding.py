"""bench/embedding.py on a few texts: one process a bound, each measured and printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_measures_each_bound_in_a_process_of_its_own():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "embedding.py"),
            "--texts",
            "24",
            "--budgets",
            "64",
            "0",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["texts"] == 24 and [r["tokens_per_run"] for r in out["rows"]] == [64, None]
    for row in out["rows"]:
        assert row["mixed_texts_per_s"] > 0 and row["short_texts_per_s"] > 0 and row["question_p50_ms"] > 0
        assert row["peak_mib"] >= row["loaded_mib"] > 0
    assert "| 64 |" in done.stdout and "| no bound |" in done.stdout
