"""bench/mem0_side.py without mem0: one line says so and how to install it; mnemo's rows still print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_without_mem0_it_says_so_and_still_times_mnemo(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("MNEMO_MEM0_PYTHON", None)
    args = ["--facts", "40", "--queries", "4", "--warmup", "1", "--adds", "1", "--json"]
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "mem0_side.py"),
            *args,
            "--mem0-python",
            str(tmp_path / "none"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if "mem0 is not installed" in line]
    assert len(said) == 1 and "pip install mem0ai==2.2.1" in said[0]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["mem0_missing"] and set(out["recall"]) == {"mnemo"} and out["recall"]["mnemo"]["n"] == 4
