"""The benchmarks' own tests: each runs a bench script small, as a person would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str, timeout: float = 300, drop: tuple[str, ...] = ()):
    """`bench/<script>` run with `args` in a Python of its own (mnemo from this checkout's src,
    the environment's variables but `drop`): its completed process, output captured."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    for name in drop:
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
