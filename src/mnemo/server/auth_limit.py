"""A limit on failed authentications, counted per client address and per key id.

A wrong key counts one failure against the address it came from and, when it is
a well-formed token (`mnemo_<key id>_<secret>`), one against its key id. Once
`failures` of them fall within `window` seconds, a wrong key from that address,
or for that key id from anywhere, is answered 429 with Retry-After instead of
401, until the oldest of those failures is a window old; failures keep counting
while over the limit, so a guesser who does not wait stays limited.

A right key is accepted whatever the counts (server/callers.py checks every key):
the people behind one address (a household, a NAT, a VPN) are not locked out
by a wrong or revoked key that one of them, or an attacker, keeps sending.
A request without any key is no guess and counts nothing.

The counts live in this process's memory: each server process keeps its own,
and a restart forgets them. Memory stays bounded: a name (an address, a key id)
keeps at most `failures` timestamps, names whose failures have all aged out are
dropped, and at most `max_tracked` addresses and as many key ids are tracked
(the one whose last failure is oldest goes first).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

from ..settings import AuthLimitSettings


class _Window:
    """Recent failures per name in a sliding window, for one kind of name."""

    def __init__(self, failures: int, window: float, max_tracked: int, clock: Callable[[], float]) -> None:
        self.failures = failures
        self.window = window
        self.max_tracked = max_tracked
        self._clock = clock
        # name -> times of its recent failures, oldest first; ordered by last failure
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, name: str) -> float | None:
        self._expire()
        times = self._seen.get(name)
        if times is None or len(times) < self.failures:
            return None
        return max(times[0] + self.window - self._clock(), 0.0) or None

    def failed(self, name: str) -> None:
        times = self._seen.pop(name, None) or deque(maxlen=self.failures)
        times.append(self._clock())
        self._seen[name] = times  # now the most recent
        self._expire()
        while len(self._seen) > self.max_tracked:
            self._seen.popitem(last=False)

    def tracked(self) -> int:
        self._expire()
        return len(self._seen)

    def _expire(self) -> None:
        """Drop names whose every failure is older than the window (they sit at the front)."""
        cutoff = self._clock() - self.window
        while self._seen:
            name, times = next(iter(self._seen.items()))
            if times[-1] > cutoff:
                break
            del self._seen[name]


class AuthLimiter:
    """Failed authentications per address and per key id. Not thread-safe: one per event loop."""

    def __init__(
        self,
        failures: int = 20,
        window: float = 60.0,
        max_tracked: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = failures
        self._addresses = _Window(failures, window, max_tracked, clock)
        self._key_ids = _Window(failures, window, max_tracked, clock)

    @classmethod
    def from_settings(cls, settings: AuthLimitSettings) -> AuthLimiter:
        return cls(settings.failures, settings.window_seconds, settings.max_addresses)

    @property
    def enabled(self) -> bool:
        return self.failures > 0

    def retry_after(self, address: str, key_id: str | None) -> float | None:
        """Seconds until a wrong key from `address`, or for `key_id`, is answered 401 again;
        None while neither is over the limit."""
        if not self.enabled:
            return None
        waits = [self._addresses.retry_after(address)]
        if key_id is not None:
            waits.append(self._key_ids.retry_after(key_id))
        return max((wait for wait in waits if wait is not None), default=None)

    def failed(self, address: str, key_id: str | None) -> float | None:
        """Count one wrong key from `address` (for `key_id`, if the token was well formed). The
        seconds to wait if either was already over the limit (answer 429), else None (401)."""
        if not self.enabled:
            return None
        limited = self.retry_after(address, key_id) is not None
        self._addresses.failed(address)
        if key_id is not None:
            self._key_ids.failed(key_id)
        return self.retry_after(address, key_id) if limited else None

    def tracked(self) -> tuple[int, int]:
        """How many addresses and key ids are being counted now."""
        return self._addresses.tracked(), self._key_ids.tracked()
