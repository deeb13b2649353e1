"""A copy of a SQLite database that servers may be writing, as of one moment (`mnemo backup`).

SQLite's online backup copies the pages under one read transaction, so the copy is the
database as one commit left it, whatever is written meanwhile (a copy of the file with `cp`
may not be: the last commits may still be in the -wal file). The copy is written beside its
target, readable by its owner only, and renamed over it at the end: a backup cut short
leaves nothing under the target's name, and never half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import sqlean


def back_up(source: Path, target: Path) -> int:
    """Copy the database at `source` to `target` (replaced when it is there); its size in bytes.
    FileNotFoundError when there is no database at `source`."""
    if not source.is_file():
        raise FileNotFoundError(2, "no database", str(source))
    descriptor, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)  # 0600
    os.close(descriptor)
    try:
        live, copy = sqlean.connect(source), sqlean.connect(partial)
        try:
            live.backup(copy)
        finally:
            copy.close()
            live.close()
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return target.stat().st_size
