"""Ctrl-C for long, resumable commands: the first asks the work to stop after the unit in
hand; the second cancels the running task, abandoning that unit (written whole or not at all)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from typing import Any

from . import output


class Interrupt:
    """`requested` turns true at the first Ctrl-C; the work checks it between units."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.requested = False
        task = asyncio.current_task()
        assert task is not None, "an Interrupt belongs to a running task"
        self._task: asyncio.Task[Any] = task

    def _on_sigint(self) -> None:
        if self.requested:
            self._task.cancel()
            return
        self.requested = True
        output.error(f"Stopping after the {self.unit} in hand (Ctrl-C again to abandon it)…")

    def forgive(self) -> None:
        """After catching the cancellation of an abandoned unit: the task goes on to report."""
        self._task.uncancel()


@contextlib.contextmanager
def two_step_interrupt(unit: str) -> Iterator[Interrupt]:
    """Install the handler for the block (where the loop supports signal handlers)."""
    interrupt = Interrupt(unit)
    loop = asyncio.get_running_loop()
    installed = False
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, interrupt._on_sigint)
        installed = True
    try:
        yield interrupt
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


@contextlib.contextmanager
def stopped_as_by_ctrl_c() -> Iterator[None]:
    """For the block, SIGTERM (`timeout`, `systemctl stop`) and SIGHUP (a closed terminal) stop
    the command as Ctrl-C does, so that its clean-up runs; it then exits as Ctrl-C would."""
    stopping = (signal.SIGTERM, signal.SIGHUP)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, interrupt) for signum in stopping}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
