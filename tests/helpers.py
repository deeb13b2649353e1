"""Small helpers shared by the tests."""

from __future__ import annotations

from datetime import datetime, timedelta


class Clock:
    """Injectable time: tests replay history at chosen dates."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def texts(items) -> list[str]:
    """The texts of facts or hits, in order."""
    return [getattr(i, "fact", i).text for i in items]
