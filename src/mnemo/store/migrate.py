"""Versioned migrations, each applied in one transaction together with its record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[Any], None]  # receives a DB-API cursor inside the open transaction


def pending(applied: set[int], migrations: Sequence[Migration]) -> list[Migration]:
    versions = [m.version for m in migrations]
    if versions != sorted(set(versions)):
        raise RuntimeError("migrations must have unique, increasing versions")
    return [m for m in migrations if m.version not in applied]
