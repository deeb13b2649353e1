"""Helpers for tests that run `mnemo serve` and `mnemo worker` as processes of their own (the
installed script), and for waiting on what they do. This module holds no tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
import psutil

MNEMO = str(Path(sys.executable).with_name("mnemo"))
ADMIN = "process-test-admin-key-0123"
START_SECONDS = 60  # how long `mnemo serve` may take to answer /healthz


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check: Callable[[], Any], timeout: float = 15.0, what: str = "the condition") -> Any:
    """Poll `check` until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return found


def environment(data_dir: Path, scripted_llm, database_url: str | None = None) -> dict[str, str]:
    """This process's environment without its MNEMO_* settings, plus a test deployment's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(
        MNEMO_DATA_DIR=str(data_dir),
        MNEMO_ADMIN_KEY=ADMIN,
        MNEMO_LLM_BASE_URL=scripted_llm.base_url,
        MNEMO_LLM_MODEL="scripted-model",
        MNEMO_JOBS__LEASE_SECONDS="2",
        MNEMO_JOBS__POLL_SECONDS="0.05",
        MNEMO_JOBS__BACKOFF_SECONDS="0.2",
    )
    if database_url is not None:
        env["MNEMO_DATABASE_URL"] = database_url
    return env


class Serve:
    """`mnemo serve` on a free port; `token` is the key it printed, if it printed one.

    The port is free when chosen, but another process may take it before the server binds it (a
    server of another test process, with pytest-xdist): then the server exits, and it is started
    again on another port. It counts as started once this very process listens on its port and
    answers there, never on another's answer from that port."""

    def __init__(
        self, env: dict[str, str], log: Path, command: Sequence[str] = (MNEMO, "serve"), attempts: int = 3
    ) -> None:
        """`command`: what starts the server, given `--port N` (another install's `mnemo serve`,
        for one)."""
        self.log = log
        log.write_bytes(b"")
        for _ in range(attempts):
            self.port = free_port()
            self.base_url = f"http://127.0.0.1:{self.port}"
            if self._start(command, env):
                break
        else:
            raise AssertionError(f"the server found its port taken {attempts} times:\n{log.read_text()}")
        # a first start prints the key once: in the first attempt's output, if that one lost its port
        found = re.search(r"mnemo_[0-9a-f]{16}_[A-Za-z0-9_-]+", log.read_text())
        self.token = found.group(0) if found else None

    def _start(self, command: Sequence[str], env: dict[str, str]) -> bool:
        """Start the server on `self.port` and wait until it serves there; False if it exited because
        the port was taken."""
        before = self.log.stat().st_size
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        # a few seconds on an idle machine; on a loaded 2-core one that also runs a Citus
        # cluster's three nodes, importing and starting it once took over 20 s
        deadline = time.monotonic() + START_SECONDS
        try:
            while not (self._listening() and self._healthy()):
                if self.process.poll() is not None:
                    said = self.log.read_bytes()[before:].decode(errors="replace")
                    if "address already in use" in said:
                        return False
                    raise AssertionError(self.log.read_text())
                assert time.monotonic() < deadline, f"the server did not start:\n{self.log.read_text()}"
                time.sleep(0.05)
        except BaseException:  # no test holds it yet: do not leave it running
            self.process.kill()
            self.process.wait(timeout=10)
            raise
        return True

    def _listening(self) -> bool:
        try:
            connections = psutil.Process(self.process.pid).net_connections("tcp")
        except psutil.Error:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == self.port for c in connections)

    def _healthy(self) -> bool:
        try:
            return httpx2.get(f"{self.base_url}/healthz", timeout=1).status_code == 200
        except httpx2.TransportError:
            return False

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM: uvicorn shuts down, then re-raises the signal."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=15)
