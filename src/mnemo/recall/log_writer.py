"""The recall log, written after the reply.

An assistant's recall hands its rows (which fact it was given, when, through
which face) to `RecallLogWriter.add` and goes on: the rows are written by a
task of the event loop a moment after the recall returned (`WAIT`: the
assistant's reply goes out first), the recalls of one person gathered
meanwhile in one transaction (store/sql/recalls.py). So no recall or reply
waits for that commit, nor for the checkpoint a commit can start, and recalls
that arrive together share one.

Whatever reads the log first writes what is waiting for that person (`flush`):
a person always reads their own recalls, in this process. Another process (two
servers on one PostgreSQL) sees them a moment later. What the person decided
meanwhile holds at the write: the switch off (and when it went off: a recall
from before is not recorded even once it is on again), a fact erased. A
process killed between a recall and its write loses those rows, never a
memory; `close` writes what is waiting (a program that recalls with `via` and
never closes its Memory loses its last rows). Each write is a task of its own,
so a reader cancelled while it waits for one takes no rows with it. When the
store falls behind and `MOST_WAITING` rows wait, a recall waits for its
person's rows to be written before it returns, so that they cannot pile up.
One event loop writes; a recall from another one writes its rows at once. A
failed write is logged, never the recall's failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from ..domain import RecallRecord
from ..store.base import Store

log = logging.getLogger(__name__)
MOST_WAITING = 10_000  # rows; past this a recall writes its own before it returns
WAIT = 0.05  # seconds from a recall to the write of its rows: the reply goes first

Rows = list[tuple[str, RecallRecord]]  # each with its recall's id


class RecallLogWriter:
    """Rows waiting to be written, by person, and the task writing them."""

    def __init__(self, store: Store, keep_after: Callable[[], datetime]) -> None:
        self._store = store
        self._keep_after = keep_after  # rows at or before this are past keeping
        self._waiting: dict[str, Rows] = {}
        self._count = 0  # rows waiting
        # one write per person at a time, each a task of its own: a caller cancelled while
        # it waits for one (a reader, a recall held back) takes no one's rows with it
        self._writing: dict[str, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None

    async def add(self, user_id: str, recall_id: str, found: Sequence[RecallRecord]) -> None:
        """Log one recall's rows: written after the caller's reply, or before this returns when
        too many wait. One event loop writes: called from another, the rows are written at once."""
        loop = asyncio.get_running_loop()
        if self._task is not None and not self._task.done() and self._task.get_loop() is not loop:
            await self._store_rows(user_id, [(recall_id, r) for r in found])
            return
        self._waiting.setdefault(user_id, []).extend((recall_id, r) for r in found)
        self._count += len(found)
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._write_waiting(), name="mnemo-recall-log")
        if self._count >= MOST_WAITING:
            await self.flush(user_id)

    async def _write_waiting(self) -> None:
        await asyncio.sleep(WAIT)  # the reply goes out first; recalls meanwhile join the write
        while self._waiting:
            free = next((u for u in self._waiting if u not in self._writing), None)
            if free is None:  # each waits for a write of theirs under way
                await asyncio.shield(next(iter(self._writing.values())))
            else:
                await asyncio.shield(self._write(free))

    async def flush(self, user_id: str) -> None:
        """Write what waits for this person, and wait for what is being written."""
        while True:
            if (writing := self._writing.get(user_id)) is not None:
                await asyncio.shield(writing)
            elif user_id in self._waiting:
                await asyncio.shield(self._write(user_id))
            else:
                return

    async def close(self) -> None:
        """Write everything waiting (the process is stopping)."""
        while self._waiting or self._writing:
            await self.flush(next(iter(self._waiting or self._writing)))
        if self._task is not None and self._task.get_loop() is asyncio.get_running_loop():
            self._task.cancel()  # nothing left for it

    def _write(self, user_id: str) -> asyncio.Task[None]:
        """The task writing what waits for this person (none may be under way)."""
        rows = self._waiting.pop(user_id)
        self._count -= len(rows)
        task = asyncio.get_running_loop().create_task(self._store_rows(user_id, rows, written=True))
        self._writing[user_id] = task
        return task

    async def _store_rows(self, user_id: str, rows: Rows, *, written: bool = False) -> None:
        """Store the rows; `written`: this is the person's write under way, over once this ends."""
        try:
            await self._store.record_recalls(user_id, rows, self._keep_after())
        except Exception:
            log.exception("the recall log of user %s was not written (%d rows)", user_id, len(rows))
        finally:
            if written:
                del self._writing[user_id]
