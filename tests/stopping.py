"""A test run stopped by SIGTERM (a CI runner's cancel, `kill`) or SIGHUP (its terminal closed)
stops as on Ctrl-C: the test in hand is interrupted and every fixture is torn down, so the
PostgreSQL server, the Citus cluster and the `mnemo` processes the tests started stop with it.

pytest-xdist's test processes are this one's children: they are sent the same signal, and tear
down their own. A second signal during the teardown is ignored (SIGKILL still ends everything at
once, leaving what was started behind)."""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType

import psutil
import pytest

STOPPING = (signal.SIGTERM, signal.SIGHUP)


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        for signum in STOPPING:
            signal.signal(signum, _interrupt)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    for other in STOPPING:
        signal.signal(other, signal.SIG_IGN)
    for child in psutil.Process().children():  # pytest-xdist's test processes, a test's servers
        with contextlib.suppress(psutil.Error):
            child.send_signal(signum)
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")
