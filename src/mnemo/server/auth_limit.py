"""A limit on failed authentications per client address, for every surface that takes a key.

After `failures` wrong keys from one address within `window` seconds, that
address is refused (429, with Retry-After) until the oldest of those failures
is a window old, and its keys are not even checked: a right guess made while
blocked is refused like a wrong one, so it tells an attacker nothing. A request
without any key is no guess and counts nothing; successful requests count
nothing and are never limited.

The count lives in this process's memory: each server process keeps its own,
and a restart forgets it. Memory stays bounded: an address keeps at most
`failures` timestamps, addresses whose failures have all aged out are dropped,
and at most `max_addresses` are tracked (the one whose last failure is oldest
goes first).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from fastapi import HTTPException, Request, status

from ..settings import AuthLimitSettings


class AuthLimiter:
    """Failed authentications per address in a sliding window. Not thread-safe: one per event loop."""

    def __init__(
        self,
        failures: int = 20,
        window: float = 60.0,
        max_addresses: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = failures
        self.window = window
        self.max_addresses = max_addresses
        self._clock = clock
        # address -> times of its recent failures, oldest first; ordered by last failure
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    @classmethod
    def from_settings(cls, settings: AuthLimitSettings) -> AuthLimiter:
        return cls(settings.failures, settings.window_seconds, settings.max_addresses)

    @property
    def enabled(self) -> bool:
        return self.failures > 0

    def retry_after(self, address: str) -> float | None:
        """Seconds until `address` may try a key again, or None if it may now."""
        if not self.enabled:
            return None
        self._expire()
        times = self._seen.get(address)
        if times is None or len(times) < self.failures:
            return None
        return max(times[0] + self.window - self._clock(), 0.0) or None

    def failed(self, address: str) -> None:
        """Count one failed authentication from `address`."""
        if not self.enabled:
            return
        now = self._clock()
        times = self._seen.pop(address, None) or deque(maxlen=self.failures)
        times.append(now)
        self._seen[address] = times  # now the most recent
        self._expire()
        while len(self._seen) > self.max_addresses:
            self._seen.popitem(last=False)

    def tracked(self) -> int:
        """How many addresses are being counted now."""
        self._expire()
        return len(self._seen)

    def _expire(self) -> None:
        """Drop addresses whose every failure is older than the window (they sit at the front)."""
        cutoff = self._clock() - self.window
        while self._seen:
            address, times = next(iter(self._seen.items()))
            if times[-1] > cutoff:
                break
            del self._seen[address]


def address_of(request: Request) -> str:
    """The client's address as the server sees it (uvicorn rewrites it from X-Forwarded-For only
    for the proxies it trusts: FORWARDED_ALLOW_IPS, by default 127.0.0.1 and ::1)."""
    return request.client.host if request.client else "unknown"


def limiter_of(request: Request) -> AuthLimiter:
    return request.app.state.auth_limiter


def refuse_if_blocked(request: Request) -> None:
    """429 with Retry-After while the caller's address is blocked; its key is not looked at."""
    wait = limiter_of(request).retry_after(address_of(request))
    if wait is not None:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"too many failed authentications from your address; try again in {math.ceil(wait)} s",
            headers={"Retry-After": str(math.ceil(wait))},
        )


def count_failure(request: Request) -> None:
    limiter_of(request).failed(address_of(request))
