"""A memory store is personal: what mnemo puts on disk is readable by its owner only.

SQLite would create the database 0644 under the usual umask, and gives its
-wal and -shm files the database file's mode: so the file is created 0600
before SQLite opens it, and one that an older mnemo left readable by others
is tightened when opened. A directory that already exists is left as its
owner set it up (the files in it are private either way).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
COMPANIONS = ("-wal", "-shm")


def private_directory(path: Path) -> None:
    """Create `path` 0700 if it is missing; missing parents get the usual mode, as with mkdir -p."""
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)


def private_database(path: Path) -> None:
    """Make sure the SQLite file at `path` and its -wal and -shm files are the owner's alone."""
    private_directory(path.parent)
    # one there already (or created meanwhile by another process) is tightened below
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    for each in (path, *(path.with_name(path.name + suffix) for suffix in COMPANIONS)):
        _tighten(each)


def _tighten(path: Path) -> None:
    """Take group and others' access away from a file of ours; another owner's is theirs to set."""
    if os.name != "posix":
        return  # the mode bits mean nothing there
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return
    mode = stat.S_IMODE(status.st_mode)
    if mode & 0o077 and status.st_uid == os.getuid():
        os.chmod(path, mode & ~0o077)
