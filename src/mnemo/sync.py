"""A blocking facade over the async Memory and its Accounts, for scripts and notebooks.

It forwards every public coroutine method of Memory, and of the Accounts it
consults (people, agents, keys, switches), so that none of them drift. The
coroutines run on an event loop of the facade's own, in a thread of its own, so
that the facade works where a loop is already running (Jupyter, an async app).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .build import open_memory
from .memory import Memory
from .settings import Settings

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread; `run` blocks its caller until a coroutine is done."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mnemo-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking mnemo call from inside its own loop would wait forever")
        if self.closed:
            coro.close()
            raise RuntimeError("this mnemo is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def closed(self) -> bool:
        return self._loop.is_closed()

    def close(self) -> None:
        if self.closed:
            return
        self.run(self._loop.shutdown_asyncgens())
        self.run(self._loop.shutdown_default_executor())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class SyncMemory:
    def __init__(self, memory: Memory, loop: LoopThread) -> None:
        self.memory = memory
        self.loop = loop

    @classmethod
    def open(cls, settings: Settings | None = None) -> SyncMemory:
        loop = LoopThread()
        try:
            memory = loop.run(open_memory(settings or Settings.load()))
        except BaseException:
            loop.close()
            raise
        return cls(memory, loop)

    @classmethod
    def wrap(cls, memory: Memory) -> SyncMemory:
        """Around an already built Memory (opened here)."""
        loop = LoopThread()
        loop.run(memory.open())
        return cls(memory, loop)

    def __getattr__(self, name: str) -> Any:
        owner = self.memory if hasattr(self.memory, name) else self.memory.accounts
        attr = getattr(owner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.loop.run(attr(*args, **kwargs))

        call.__name__ = name
        call.__doc__ = attr.__doc__
        return call

    def close(self) -> None:
        if self.loop.closed:
            return
        try:
            self.loop.run(self.memory.close())
        finally:
            self.loop.close()

    def __enter__(self) -> SyncMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
