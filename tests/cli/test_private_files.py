"""What mnemo writes to disk is its owner's alone, whatever the umask lets others read."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import add, invoker, ok
from tests.server.processes import Serve

pytestmark = pytest.mark.slow  # the CLI, and processes


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """The usual umask, under which files are made readable by everyone unless mnemo says otherwise."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def database_files(data_dir: Path) -> list[Path]:
    return [data_dir / name for name in ("mnemo.db", "mnemo.db-wal", "mnemo.db-shm")]


def test_database_and_data_dir_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    mnemo = invoker(data_dir, None)
    add(mnemo, "My passport number is X1234567")
    assert mode(data_dir) == 0o700
    assert mode(data_dir / "mnemo.db") == 0o600

    exported = tmp_path / "everything.jsonl"
    ok(mnemo("export", "--output", str(exported)))
    assert "X1234567" in exported.read_text() and mode(exported) == 0o600

    # a running server holds the database open: its -wal and -shm files exist meanwhile
    served = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    server = Serve({**env, "MNEMO_DATA_DIR": str(served)}, tmp_path / "serve.log")
    try:
        assert server.token is not None
        assert mode(served) == 0o700
        assert [mode(f) for f in database_files(served)] == [0o600, 0o600, 0o600]
    finally:
        server.stop()


# an older mnemo, still running: it holds the database open, so its -wal and -shm files exist
OLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode = WAL")
db.execute("CREATE TABLE older_version (x)")
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_database_an_older_version_left_readable_is_made_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    mnemo = invoker(data_dir, None)
    add(mnemo, "My passport number is X1234567")
    os.chmod(data_dir / "mnemo.db", 0o644)
    older = subprocess.Popen(
        [sys.executable, "-c", OLDER, str(data_dir / "mnemo.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert older.stdout is not None and older.stdout.readline() == "ready\n"
        assert [mode(f) for f in database_files(data_dir)] == [0o644, 0o644, 0o644]

        assert "X1234567" in ok(mnemo("list")).stdout
        assert [mode(f) for f in database_files(data_dir)] == [0o600, 0o600, 0o600]
    finally:
        older.communicate("", timeout=30)
