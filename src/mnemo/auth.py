"""Who is calling: the one check behind every surface (the API, the chat proxy, MCP at /mcp,
the web page's sign-in and its cookie).

Every key presented is checked: the admin key from settings first (compared
in constant time), then a user's key, looked up by its key id with one hash
compared (Accounts.authenticate; a malformed token never reaches the store).
A right key is accepted whatever the failure counts; a wrong one is counted
and refused, with the seconds to wait when its address or key id is over the
limit.

The limit (AuthLimiter): a wrong key counts one failure against the address it
came from and, when it is a well-formed token (`mnemo_<key id>_<secret>`), one
against its key id. Once `failures` of them fall within `window` seconds, a
wrong key from that address, or for that key id from anywhere, is answered 429
with Retry-After instead of 401, until the oldest of those failures is a
window old; failures keep counting while over the limit, so a guesser who does
not wait stays limited. The people behind one address (a household, a NAT, a
VPN) are not locked out by a wrong or revoked key that one of them, or an
attacker, keeps sending. A request without any key is no guess and counts
nothing.

The counts live in this process's memory: each server process keeps its own,
and a restart forgets them. Memory stays bounded: a name (an address, a key id)
keeps at most `failures` timestamps, names whose failures have all aged out are
dropped, and at most `max_tracked` addresses and as many key ids are tracked
(the one whose last failure is oldest goes first).

The faces ask here: `identify` (the web page's sign-in and cookie), and the
dependencies `get_caller`, `get_user` and `require_admin` for a bearer key (the
API, the proxy, MCP), which answer 401, 403 or 429 as HTTP errors.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, Security, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from . import keys
from .accounts import AccountDisabled, Accounts
from .domain import User
from .http.client_address import address_of
from .observe import QUIET, Observer
from .settings import AuthLimitSettings, Settings


@dataclass(frozen=True)
class Caller:
    """A user (by API key) or the administrator (by the admin key from settings)."""

    user: User | None
    admin: bool = False


class KeyRefused(Exception):
    """A wrong key (unknown, revoked, or not a key at all), or a right one of a disabled account."""

    def __init__(self, wait: int | None, *, disabled: bool = False) -> None:
        super().__init__(
            "this account is disabled: ask the server's administrator"
            if disabled
            else "unknown or revoked API key"
        )
        self.wait = wait  # seconds, when it came while its address or key id was over the limit
        self.disabled = disabled  # the key is right, and its account disabled (counted as no failure)


class Authenticator:
    """The check of every key presented to one server process (the app that mounts the faces
    makes one, with its limit on failures)."""

    def __init__(
        self, accounts: Accounts, admin_key: str | None, limiter: AuthLimiter, observer: Observer = QUIET
    ) -> None:
        self.accounts = accounts
        self.admin_key = admin_key
        self.limiter = limiter
        self.observer = observer  # hears each refusal (mnemo.observe)

    @classmethod
    def from_settings(
        cls, accounts: Accounts, settings: Settings, observer: Observer = QUIET
    ) -> Authenticator:
        return cls(accounts, settings.admin_key, AuthLimiter.from_settings(settings.auth_limit), observer)

    async def identify(self, token: str, address: str) -> Caller:
        """The caller `token` belongs to; KeyRefused (counted against `address`) if nobody."""
        if self.admin_key and keys.same_secret(token, self.admin_key):
            return Caller(None, admin=True)
        try:
            user = await self.accounts.authenticate(token)
        except AccountDisabled:
            self.observer.auth_failed("disabled")
            raise KeyRefused(None, disabled=True) from None
        if user is not None:
            return Caller(user)
        parsed = keys.parse(token)
        wait = self.limiter.failed(address, parsed[0] if parsed else None)
        self.observer.auth_failed("refused" if wait is None else "limited")
        raise KeyRefused(None if wait is None else math.ceil(wait))


async def identify(request: HTTPConnection, token: str) -> Caller:
    """The caller `token` belongs to, presented with `request` (whose address a failure counts
    against); KeyRefused if it belongs to nobody."""
    authenticator: Authenticator = request.app.state.authenticator
    return await authenticator.identify(token, address_of(request))


# -- a key sent as 'Authorization: Bearer <key>' ------------------------------------------


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        request.app.state.authenticator.observer.auth_failed("missing")
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "send an API key as 'Authorization: Bearer <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


# declared so that the API's schema says how to authenticate (/docs gets its Authorize
# button); the header itself is read by _bearer, which says what is wrong with it
BEARER = HTTPBearer(
    auto_error=False, scheme_name="apiKey", description="A person's API key (mnemo_…), or the admin key."
)


async def get_caller(
    request: Request, _declared: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None
) -> Caller:
    try:
        return await identify(request, _bearer(request))
    except KeyRefused as refused:
        if refused.disabled:
            raise HTTPException(status.HTTP_403_FORBIDDEN, str(refused)) from None
        if refused.wait is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, str(refused), headers={"WWW-Authenticate": "Bearer"}
            ) from None
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            "too many failed authentications from your address or for this key id;"
            f" try again in {refused.wait} s",
            headers={"Retry-After": str(refused.wait)},
        ) from None


async def get_user(caller: Annotated[Caller, Depends(get_caller)]) -> User:
    if caller.user is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "the admin key cannot act as a user; use a user's key")
    return caller.user


def key_in_use(request: Request) -> str | None:
    """The id of the API key this (authenticated) request came with."""
    parsed = keys.parse(_bearer(request))
    return parsed[0] if parsed else None


async def require_admin(caller: Annotated[Caller, Depends(get_caller)]) -> Caller:
    if not caller.admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this needs the admin key")
    return caller


CurrentUser = Annotated[User, Depends(get_user)]
Admin = Annotated[Caller, Depends(require_admin)]


# -- the limit on failed authentications ------------------------------------------------


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
