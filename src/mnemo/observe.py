"""What the core tells whoever watches it run: timings and outcomes, never whose or what.

The core calls an `Observer` at a few points (each recall arm, each embedding run, each job,
each refused key); mnemo.http.metrics turns the calls into Prometheus series. Nothing here
imports a metrics library, and nothing passed carries a user, a key, a name or any text: an
arm, a job's outcome and a failure's category are each one of a few fixed words.
"""

from __future__ import annotations

from typing import Protocol


class Observer(Protocol):
    def recall_arm(self, arm: str, seconds: float) -> None:
        """One arm of a recall ran (one of recall.ARMS)."""

    def embedded(self, seconds: float) -> None:
        """One run of the embedding model."""

    def job_finished(self, outcome: str, seconds: float) -> None:
        """A worker let go of a job: done, retry, failed (no attempts left), released, lost."""

    def job_failed(self, reason: str) -> None:
        """Why a job did not succeed, by category (domain.FailReason): never its message."""

    def auth_failed(self, reason: str) -> None:
        """A request with a wrong key (refused), one over the limit (limited), none (missing), or a
        right key of a disabled account (disabled)."""


class Quiet:
    """The observer when nobody watches."""

    def recall_arm(self, arm: str, seconds: float) -> None:
        pass

    def embedded(self, seconds: float) -> None:
        pass

    def job_finished(self, outcome: str, seconds: float) -> None:
        pass

    def job_failed(self, reason: str) -> None:
        pass

    def auth_failed(self, reason: str) -> None:
        pass


QUIET = Quiet()
