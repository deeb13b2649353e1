"""Who is signed in, and whether a form really came from our own page.

The sign-in cookie holds the API key itself (httpOnly, SameSite=Strict, Secure
over https): every request authenticates it again, by the same rule as a key
sent to the API (mnemo.auth), so revoking the key signs its sessions out
at once, and nothing about a session is kept on the server.

A state-changing form must carry a token, HMAC-SHA256(server secret, key),
compared in constant time; and a request that says it comes from another site
(Sec-Fetch-Site, Origin) is refused whatever it carries.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.responses import Response

from ..accounts import Accounts
from ..auth import KeyRefused, identify
from ..domain import Scope, Status, User
from ..memory import Memory

COOKIE = "mnemo_session"
CSRF_FIELD = "csrf"
SECRET_NAME = "web-forms"


class SignInNeeded(Exception):
    """No valid sign-in cookie: the page sends the person to /signin."""


class Refused(Exception):
    """A state-changing request that did not prove it came from our own page."""


class BadForm(Exception):
    """A form no page of ours sends: one that cannot be read, or shaped beyond what a page holds."""


@dataclass(frozen=True)
class Session:
    user: User
    key: str  # the API key the person signed in with; never rendered
    csrf: str
    waiting: int = 0  # candidates waiting for review: the count on the Review tab

    @property
    def scope(self) -> Scope:
        """The person's own view: everything they own, private agents included."""
        return Scope(self.user.id, all_agents=True)


def memory_of(request: Request) -> Memory:
    return request.app.state.memory


def accounts_of(request: Request) -> Accounts:
    return request.app.state.accounts


async def csrf_token(accounts: Accounts, key: str) -> str:
    secret = await accounts.secret(SECRET_NAME)
    return hmac.new(secret.encode(), key.encode(), hashlib.sha256).hexdigest()


async def resume(request: Request) -> Session | None:
    """The signed-in person; None without a cookie, KeyRefused if its key signs nobody in."""
    key = request.cookies.get(COOKIE)
    if not key:
        return None
    caller = await identify(request, key)  # a cookie is one more way to present a key: same counts
    if caller.user is None:
        raise KeyRefused(None)  # the admin key is nobody's: the page is a person's
    waiting = await memory_of(request).count(
        Scope(caller.user.id, all_agents=True), statuses=(Status.CANDIDATE,)
    )
    session = Session(caller.user, key, await csrf_token(accounts_of(request), key), waiting)
    request.state.session = session
    return session


async def current(request: Request) -> Session | None:
    """The signed-in person, if the cookie holds a key that still works."""
    try:
        return await resume(request)
    except KeyRefused:
        return None


async def signed_in(request: Request) -> Session:
    session = await current(request)
    if session is None:
        raise SignInNeeded
    return session


def cross_site(request: Request) -> bool:
    """Whether the browser says this request was started by another site."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower()


async def checked_form(request: Request, session: Annotated[Session, Depends(signed_in)]) -> FormData:
    """The form of a state-changing request, once it has proved it came from our page."""
    if cross_site(request):
        raise Refused("it came from another site")
    form = await read_form(request)
    token = form.get(CSRF_FIELD)
    if not isinstance(token, str) or not hmac.compare_digest(token.encode(), session.csrf.encode()):
        raise Refused("its form token is missing or wrong (the page may be out of date: reload it)")
    return form


async def read_form(request: Request) -> FormData:
    """The request's form. Starlette refuses one it will not read (over 1,000 fields or
    files, a field over 1 MB, broken multipart) with an HTTPException: a BadForm here, so
    that the page answers 400 with its own error page."""
    try:
        return await request.form()
    except HTTPException as exc:
        raise BadForm(f"the form could not be read. {exc.detail}") from exc


def sign_in(response: Response, request: Request, key: str) -> None:
    response.set_cookie(
        COOKIE,
        key,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def sign_out(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE, httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/"
    )


SessionDep = Annotated[Session, Depends(signed_in)]
FormDep = Annotated[FormData, Depends(checked_form)]
