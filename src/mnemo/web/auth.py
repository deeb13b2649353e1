"""Signing in with an API key, and out."""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import Response

from .. import keys
from ..server.auth_limit import address_of, count_failure, limiter_of
from .forms import text
from .render import local_path, page, redirect
from .routing import web_router
from .session import COOKIE, FormDep, Refused, cross_site, current, memory_of, read_form, sign_in, sign_out

router = web_router()

HOME = "/memories"


@router.get("/")
async def home(request: Request) -> Response:
    return redirect(HOME if await current(request) else "/signin")


@router.get("/signin")
async def signin_form(request: Request) -> Response:
    if (blocked := _blocked(request)) is not None:
        return blocked  # the cookie stays: it may hold a good key, to be checked once the wait is over
    if await current(request):
        return redirect(local_path(request.query_params.get("next"), HOME))
    ended = bool(request.cookies.get(COOKIE))  # a cookie whose key no longer works
    response = _form(request, "", ended=ended)
    if ended:
        sign_out(response, request)
    return response


@router.post("/signin")
async def signin(request: Request) -> Response:
    if cross_site(request):
        raise Refused("it came from another site")
    form = await read_form(request)
    key = text(form, "key", 500)
    target = local_path(form.get("next"), HOME)
    if (blocked := _blocked(request, target)) is not None:
        return blocked
    if not key:
        return _form(request, "Enter your API key.", status=422, next=target)
    settings = request.app.state.settings
    if settings.admin_key and keys.same_secret(key, settings.admin_key):
        return _form(
            request,
            "That is the server's admin key: it manages the server and is not a person."
            " Sign in with your own API key (mnemo users create NAME makes one).",
            status=403,
            next=target,
        )
    if await memory_of(request).authenticate(key) is None:
        count_failure(request)
        return _form(request, "That key is unknown or was revoked.", status=401, next=target)
    response = redirect(target)
    sign_in(response, request, key)
    return response


@router.post("/signout")
async def signout(request: Request, _: FormDep) -> Response:
    response = redirect("/signin", "You are signed out.")
    sign_out(response, request)
    return response


def _form(
    request: Request, error: str, *, status: int = 200, ended: bool = False, next: str = ""
) -> Response:
    target = next or local_path(request.query_params.get("next"), "")
    return page(request, "signin.html", status=status, error=error, ended=ended, next=target)


def _blocked(request: Request, next: str = "") -> Response | None:
    """The form, answering 429, while this address has failed to sign in too often."""
    wait = limiter_of(request).retry_after(address_of(request))
    if wait is None:
        return None
    seconds = math.ceil(wait)
    message = f"Too many wrong keys were tried from your address. Try again in {seconds} seconds."
    response = _form(request, message, status=429, next=next)
    response.headers["Retry-After"] = str(seconds)
    return response
