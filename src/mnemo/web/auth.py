"""Signing in with an API key, and out."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..auth import KeyRefused, identify
from .forms import text
from .render import local_path, page, redirect
from .routing import web_router
from .session import FormDep, Refused, cross_site, current, read_form, resume, sign_in, sign_out

router = web_router()

HOME = "/memories"


@router.get("/")
async def home(request: Request) -> Response:
    return redirect(HOME if await current(request) else "/signin")


@router.get("/signin")
async def signin_form(request: Request) -> Response:
    try:
        if await resume(request):
            return redirect(local_path(request.query_params.get("next"), HOME))
    except KeyRefused as refused:  # the cookie's key no longer works: say so, and drop it
        if refused.wait is not None:
            response = _limited(request, refused)
        else:
            response = _form(request, "", ended="disabled" if refused.disabled else "refused")
        sign_out(response, request)
        return response
    return _form(request, "")


@router.post("/signin")
async def signin(request: Request) -> Response:
    if cross_site(request):
        raise Refused("it came from another site")
    form = await read_form(request)
    key = text(form, "key", 500)
    target = local_path(form.get("next"), HOME)
    if not key:
        return _form(request, "Enter your API key.", status=422, next=target)
    try:
        caller = await identify(request, key)
    except KeyRefused as refused:
        if refused.disabled:
            message = "This account is disabled. Ask the server's administrator to enable it again."
            return _form(request, message, status=403, next=target)
        if refused.wait is None:
            return _form(request, "That key is unknown or was revoked.", status=401, next=target)
        return _limited(request, refused, target)
    if caller.admin:
        return _form(
            request,
            "That is the server's admin key: it manages the server and is not a person."
            " Sign in with your own API key (mnemo users create NAME makes one).",
            status=403,
            next=target,
        )
    response = redirect(target)
    sign_in(response, request, key)
    return response


@router.post("/signout")
async def signout(request: Request, _: FormDep) -> Response:
    response = redirect("/signin", "You are signed out.")
    sign_out(response, request)
    return response


def _form(request: Request, error: str, *, status: int = 200, ended: str = "", next: str = "") -> Response:
    target = next or local_path(request.query_params.get("next"), "")
    return page(request, "signin.html", status=status, error=error, ended=ended, next=target)


def _limited(request: Request, refused: KeyRefused, next: str = "") -> Response:
    """The form, answering 429, for a wrong key while its address or key id is over the limit."""
    message = (
        "Too many wrong keys were tried from your address or for this key."
        f" Try again in {refused.wait} seconds."
    )
    response = _form(request, message, status=429, next=next)
    response.headers["Retry-After"] = str(refused.wait)
    return response
