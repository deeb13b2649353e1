"""A test run stopped by SIGTERM, or by Ctrl-C, stops the PostgreSQL server and the processes
its tests started (tests/stopping.py), with and without pytest-xdist's test processes.

Each case runs pytest on a probe test that takes the session's PostgreSQL and starts a process of
its own (as the server tests start `mnemo serve`), says so in a file, and waits; then the run is
stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, os, subprocess, sys, time
from pathlib import Path

import psycopg
import pytest


@pytest.fixture
def child():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process
    process.kill()
    process.wait()


def test_probe(postgres_url, child):
    with psycopg.connect(postgres_url) as conn:
        data = conn.execute("SHOW data_directory").fetchone()[0]
    postmaster = int((Path(data) / "postmaster.pid").read_text().split()[0])
    Path(os.environ["PROBE_SAYS"]).write_text(json.dumps(
        {"postmaster": postmaster, "data": data, "child": child.pid, "tests": os.getpid()}))
    time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
@pytest.mark.backend("postgres")
@pytest.mark.parametrize(
    ("workers", "signum", "to_group"),
    [(0, signal.SIGTERM, False), (2, signal.SIGTERM, False), (2, signal.SIGINT, True)],
    ids=["sigterm", "sigterm-xdist", "ctrl-c-xdist"],
)
def test_a_stopped_run_stops_what_its_tests_started(tmp_path: Path, workers: int, signum, to_group) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    says = tmp_path / "says.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "PYTEST_"))}
    env["PROBE_SAYS"] = str(says)
    command = [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "-p", "tests.conftest"]
    command += ["-p", "no:cacheprovider", "--backend=postgres", "-n", str(workers), str(probe)]
    run = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
        # Ctrl-C reaches a terminal's job as SIGINT, which a shell's background job ignores
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while not says.exists() or not says.read_text():
            assert run.poll() is None, run.communicate()[0].decode()
            assert time.monotonic() < deadline, "the probe never started"
            time.sleep(0.1)
        started = json.loads(says.read_text())
        if to_group:
            os.killpg(run.pid, signum)
        else:
            run.send_signal(signum)
        output = run.communicate(timeout=60)[0].decode()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    try:
        assert "KeyboardInterrupt" in output and "no tests ran" in output, output
        deadline = time.monotonic() + 10
        while not all(_gone(started[what]) for what in ("postmaster", "child", "tests")):
            assert time.monotonic() < deadline, f"still running: {started}\n{output}"
            time.sleep(0.1)
        assert not Path(started["data"]).exists()  # its temporary data folder went with it
    finally:  # what a failed case left behind
        for what, signum in (("child", signal.SIGKILL), ("postmaster", signal.SIGINT)):
            if not _gone(started[what]):
                os.kill(started[what], signum)
