"""A blocking facade over the async Memory and its Accounts, for scripts and notebooks.

It forwards every public coroutine method of Memory, and of the Accounts it
consults (people, agents, keys, switches), so that none of them drift.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from .build import open_memory
from .memory import Memory
from .settings import Settings


class SyncMemory:
    def __init__(self, memory: Memory, loop: asyncio.AbstractEventLoop) -> None:
        self._memory = memory
        self._loop = loop

    @classmethod
    def open(cls, settings: Settings | None = None) -> SyncMemory:
        loop = asyncio.new_event_loop()
        memory = loop.run_until_complete(open_memory(settings or Settings.load()))
        return cls(memory, loop)

    @classmethod
    def wrap(cls, memory: Memory) -> SyncMemory:
        """Around an already built Memory (opened here)."""
        loop = asyncio.new_event_loop()
        loop.run_until_complete(memory.open())
        return cls(memory, loop)

    def __getattr__(self, name: str) -> Any:
        owner = self._memory if hasattr(self._memory, name) else self._memory.accounts
        attr = getattr(owner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(attr(*args, **kwargs))

        call.__name__ = name
        call.__doc__ = attr.__doc__
        return call

    def close(self) -> None:
        self._loop.run_until_complete(self._memory.close())
        self._loop.close()

    def __enter__(self) -> SyncMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
