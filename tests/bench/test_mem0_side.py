"""bench/mem0_side.py without mem0: one line says so and how to install it; mnemo's rows still print."""

from __future__ import annotations

import json

from tests.bench import run_bench


def test_without_mem0_it_says_so_and_still_times_mnemo(tmp_path):
    args = ["--facts", "40", "--queries", "4", "--warmup", "1", "--adds", "1", "--json"]
    done = run_bench(
        "mem0_side.py",
        *args,
        "--mem0-python",
        str(tmp_path / "none"),
        timeout=120,
        drop=("MNEMO_MEM0_PYTHON",),
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if "mem0 is not installed" in line]
    assert len(said) == 1 and "pip install mem0ai==2.2.1" in said[0]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["mem0_missing"] and set(out["recall"]) == {"mnemo"} and out["recall"]["mnemo"]["n"] == 4
