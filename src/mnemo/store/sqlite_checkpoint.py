"""The write-ahead log's checkpoints, off the request path.

SQLite copies its write-ahead log back into the database file once the log passes 1,000
pages, in the connection whose commit crossed the line and before that commit returns: one
request in a few dozen paid ~10–100 ms for it (a proxied recall writes ~190 KB of recall log).
The store's connection turns that off (`wal_autocheckpoint = 0`), and a thread of the store's
own, with a connection of its own, runs a PASSIVE checkpoint whenever the log has been written
since the last one, at most every `every` seconds. A PASSIVE checkpoint waits for no one and
blocks no reader or writer: what a reader still needs is copied at a later one. An erasure's
checkpoint (TRUNCATE, which empties the log of the erased text) stays where it is."""

from __future__ import annotations

import contextlib
import logging
import os
import threading

import sqlean

log = logging.getLogger(__name__)

EVERY = 0.5  # seconds between looks at the log


class Checkpointer:
    def __init__(self, path: str, every: float | None = None) -> None:
        self.path = path
        self.every = EVERY if every is None else every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mnemo-checkpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop, after a last checkpoint of what was written."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        conn = sqlean.connect(self.path, isolation_level=None, check_same_thread=False)
        seen: int | None = None
        try:
            while True:
                stopping = self._stop.wait(self.every)
                with contextlib.suppress(FileNotFoundError):
                    written = os.stat(self.path + "-wal").st_mtime_ns
                    if written != seen:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                        seen = written
                if stopping:
                    return
        except Exception:  # the log then grows until the next start; the store goes on
            log.exception("the write-ahead log of %s is no longer checkpointed", self.path)
        finally:
            conn.close()
