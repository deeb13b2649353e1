"""A copy of a SQLite database that servers may be writing, as of one moment (`mnemo backup`).

SQLite's online backup copies the pages under one read transaction, so the copy is the
database as one commit left it, whatever is written meanwhile (a copy of the file with `cp`
may not be: the last commits may still be in the -wal file). The copy is written beside its
target, readable by its owner only, in rollback-journal mode (it needs no -wal file to be
whole), and renamed over the target at the end: a backup cut short leaves nothing under the
target's name, and never half a file. What a replaced target left beside it (a -wal, -shm or
-journal file, which SQLite would read into the new copy when it is opened) goes with it."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import sqlean

from .private_files import COMPANIONS

JOURNALS = (*COMPANIONS, "-journal")  # the files SQLite keeps beside a database


class SameFile(ValueError):
    """The target is the database itself, or one of the files SQLite keeps beside it."""


def back_up(source: Path, target: Path) -> int:
    """Copy the database at `source` to `target` (replaced when it is there); its size in bytes.
    FileNotFoundError when there is no database at `source` or no folder for `target`; SameFile
    when `target` is the database or one of its journals (by any path, link or `..`)."""
    if not source.is_file():
        raise FileNotFoundError(errno.ENOENT, "no database", str(source))
    database = source.resolve()
    if target.resolve() in {database, *(database.with_name(database.name + j) for j in JOURNALS)}:
        raise SameFile(f"{target} is the database, or a file SQLite keeps beside it")
    if not target.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder", str(target.parent))
    try:  # 0600; a short name, whatever the target's length
        descriptor, name = tempfile.mkstemp(prefix=".mnemo-backup-", dir=target.parent)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(target.parent)) from None
    os.close(descriptor)
    partial = Path(name)
    try:
        live, copy = sqlean.connect(source), sqlean.connect(partial)
        try:
            live.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
            live.close()
        for journal in JOURNALS:
            try:
                target.with_name(target.name + journal).unlink(missing_ok=True)
            except OSError as exc:
                if exc.errno != errno.ENAMETOOLONG:  # a name too long to be there at all
                    raise
        os.replace(partial, target)
    finally:
        for leftover in (partial, *(partial.with_name(partial.name + j) for j in JOURNALS)):
            leftover.unlink(missing_ok=True)
    return target.stat().st_size
