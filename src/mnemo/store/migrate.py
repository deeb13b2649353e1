"""Versioned migrations, each applied in one transaction together with its record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Cursor = Any  # a DB-API cursor (sqlean's, psycopg's) inside a migration's transaction

# the record of what ran: its statements, in the shared form (store/sql/tx.py); `{time}` is the
# database's type for a time
RECORDS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations"
    " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at {time} NOT NULL)"
)
APPLIED = "SELECT version FROM schema_migrations ORDER BY version"
RECORD = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[Cursor], None]


def pending(applied: set[int], migrations: Sequence[Migration]) -> list[Migration]:
    versions = [m.version for m in migrations]
    if versions != sorted(set(versions)):
        raise RuntimeError("migrations must have unique, increasing versions")
    return [m for m in migrations if m.version not in applied]
