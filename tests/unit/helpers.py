"""Facts to feed the pure core: built as the writer builds them, at fixed times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mnemo.domain import Fact, Scope, Source, Status
from mnemo.write import changes

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def fact(text: str = "I live in Lisbon", *, status: Status = Status.ACTIVE, **kw: Any) -> Fact:
    """A new fact of user `u` made at NOW (changes.new_fact), then with `kw` set on it."""
    made = changes.new_fact(Scope("u"), text, now=NOW, source=Source(), status=status)
    return made.evolve(**kw) if kw else made
