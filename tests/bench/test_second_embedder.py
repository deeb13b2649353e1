"""bench/second_embedder.py on a small store: the second model's vectors filled in and counted,
recall timed with it and without, the ratio printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_fills_in_every_facts_second_vector_and_times_recall_with_and_without():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    args = ["--facts", "120", "--queries", "4", "--json"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "second_embedder.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["facts"] == 120 and out["fill"]["second_facts_per_s"] > 0
    assert "filled in 120 vectors" in done.stderr
    assert set(out["recall"]) == {"one embedder", "with the second"}
    assert out["ratio_p50"] > 0 and "with / without: p50" in done.stdout
