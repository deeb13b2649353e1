"""The write-ahead log is copied back into the database by the store's own thread, never by a
commit on the request path (store/sqlite_checkpoint.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import sqlean

from mnemo.store import sqlite_checkpoint
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import raw_sql

pytestmark = pytest.mark.backend("sqlite")

# 12 MB in one commit: three times the log at which SQLite's own checkpoint would have run
FILL = (
    "INSERT INTO filler WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)"
    " SELECT randomblob(4000) FROM n"
)


def in_the_file(path: Path) -> int | None:
    """The filler rows the database file itself holds, whatever its write-ahead log holds; None
    while a checkpoint is copying pages in (read without locks, the file may be half-written)."""
    try:
        with sqlean.connect(f"file:{path}?immutable=1", uri=True) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'filler'").fetchone():
                return 0
            return conn.execute("SELECT count(*) FROM filler").fetchone()[0]
    except sqlean.DatabaseError:
        return None


async def test_a_commit_never_checkpoints_and_closing_copies_the_log_in(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sqlite_checkpoint, "EVERY", 3600.0)  # the thread looks only when stopped
    store = SQLiteStore(tmp_path / "mnemo.db")
    await store.open()
    await raw_sql(store, "CREATE TABLE filler (x BLOB)")
    await raw_sql(store, FILL)
    assert in_the_file(tmp_path / "mnemo.db") == 0  # all of it still in the log
    await store.close()
    assert in_the_file(tmp_path / "mnemo.db") == 3000


async def test_the_thread_copies_the_log_in_while_the_store_is_open(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sqlite_checkpoint, "EVERY", 0.05)
    store = SQLiteStore(tmp_path / "mnemo.db")
    await store.open()
    try:
        await raw_sql(store, "CREATE TABLE filler (x BLOB)")
        await raw_sql(store, FILL)
        deadline = time.monotonic() + 10
        while in_the_file(tmp_path / "mnemo.db") != 3000:
            assert time.monotonic() < deadline, "the log was never copied into the database"
            await asyncio.sleep(0.05)
    finally:
        await store.close()
