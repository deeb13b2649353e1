"""When a request is tried again, and after how long.

The API answers 429 (too many failed authentications) and 503 (its model is
unavailable) before it changes anything, so those are tried again whatever the
method: adding a memory twice is safe anyway (a restatement reinforces), but a
turn sent twice would be stored twice, and these answers mean it was not. With
no answer at all, only a request that could not have reached the server (no
connection) or a read (GET) is tried again.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx2

RETRIED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class Retry:
    """At most `attempts` tries in all, over at most `total` seconds; between tries, the
    answer's Retry-After, else `backoff` doubled each time (with jitter), at most `cap`."""

    attempts: int = 4
    total: float = 30.0
    backoff: float = 0.5
    cap: float = 8.0

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """How long to wait before try `attempt + 1` (attempt counts from 1)."""
        if retry_after is not None:
            return retry_after
        return min(self.cap, self.backoff * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    def allows(self, attempt: int, started: float, wait: float) -> bool:
        """Whether another try fits: under `attempts`, and the wait ends within `total`."""
        return attempt < self.attempts and time.monotonic() - started + wait <= self.total


NEVER = Retry(attempts=1)


def retry_after(response: httpx2.Response) -> float | None:
    """The Retry-After header in seconds: a number of seconds or an HTTP date; None if absent
    or unreadable."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def worth_retrying(method: str, failure: Exception) -> bool:
    """A request that got no answer: tried again if it never left, or if it only reads."""
    return isinstance(failure, httpx2.ConnectError | httpx2.ConnectTimeout) or (
        method == "GET" and isinstance(failure, httpx2.TransportError)
    )
