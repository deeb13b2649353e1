"""Who presents a key: the one check behind every surface (API, chat proxy, MCP, web sign-in and
the web page's cookie).

Every key presented is checked: a lookup by its key id and one hash compared
(a malformed token never reaches the store). A right key is accepted whatever
the failure counts; a wrong one is counted (server/auth_limit.py) and refused,
with the seconds to wait when its address or key id is over the limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from .. import keys
from ..domain import User
from ..http.client_address import address_of
from .auth_limit import AuthLimiter


@dataclass(frozen=True)
class Caller:
    """A user (by API key) or the administrator (by the admin key from settings)."""

    user: User | None
    admin: bool = False


class KeyRefused(Exception):
    """A wrong key: unknown, revoked, or not a key at all."""

    def __init__(self, wait: int | None) -> None:
        super().__init__("unknown or revoked API key")
        self.wait = wait  # seconds, when it came while its address or key id was over the limit


async def identify(request: HTTPConnection, token: str) -> Caller:
    """The caller `token` belongs to; KeyRefused (counted) if it belongs to nobody."""
    settings = request.app.state.settings
    if settings.admin_key and keys.same_secret(token, settings.admin_key):
        return Caller(None, admin=True)
    user = await request.app.state.accounts.authenticate(token)
    if user is not None:
        return Caller(user)
    limiter: AuthLimiter = request.app.state.auth_limiter
    parsed = keys.parse(token)
    wait = limiter.failed(address_of(request), parsed[0] if parsed else None)
    raise KeyRefused(None if wait is None else math.ceil(wait))
