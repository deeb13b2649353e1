"""The operator's page at /admin, signed in with the admin key (a cookie of its own, for /admin
only): the server's memory mode, everyone with their keys, budgets and usage, and their turns
in the queue; and, for one person, their keys (create, revoke, last used), budget, name and
whether the account is disabled. Each action goes to the server's log, without texts (no name
either); the page shows no memory, message or key secret but a new key's, once."""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..auth import KeyRefused, identify
from ..domain import MAX_NAME, Conflict, InvalidInput, MemoryMode, known_id
from .forms import text
from .render import page, redirect
from .routing import web_router
from .session import SECRET_NAME, Refused, accounts_of, cross_site, memory_of, read_form

router = web_router()
log = logging.getLogger("mnemo.admin")

COOKIE = "mnemo_admin"
HOME = "/admin"
MODES = ("", *(str(m) for m in MemoryMode))


async def _signed_in(request: Request) -> str | None:
    """The form token of the administrator signed in on this browser; None if no one is."""
    key = request.cookies.get(COOKIE)
    if not key:
        return None
    try:
        caller = await identify(request, key)
    except KeyRefused:
        return None
    if not caller.admin:
        return None
    secret = await accounts_of(request).secret(SECRET_NAME)
    return hmac.new(secret.encode(), b"admin:" + key.encode(), hashlib.sha256).hexdigest()


async def _form(request: Request) -> tuple[str, Any]:
    """The administrator's form token and the form, once it proved it came from this page
    (Refused: no administrator is signed in here, or the form is not this page's)."""
    token = await _signed_in(request)
    if token is None:
        raise Refused("sign in to administration first")
    if cross_site(request):
        raise Refused("it came from another site")
    form = await read_form(request)
    sent = form.get("csrf")
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), token.encode()):
        raise Refused("its form token is missing or wrong (the page may be out of date: reload it)")
    return token, form


def _page(request: Request, template: str, token: str, **context: Any) -> Response:
    return page(request, template, admin_csrf=token, section="admin", **context)


async def _user_id(request: Request, user: str) -> str:
    """The id of the person named in the address (NotFound: no one)."""
    return (await accounts_of(request).existing_user_by_id(known_id(user, "user"))).id


@router.get("/admin/signin")
async def signin_form(request: Request) -> Response:
    if await _signed_in(request):
        return redirect(HOME)
    return page(request, "admin_signin.html", error="")


@router.post("/admin/signin")
async def signin(request: Request) -> Response:
    if cross_site(request):
        raise Refused("it came from another site")
    key = text(await read_form(request), "key", 500)
    try:
        caller = await identify(request, key) if key else None
    except KeyRefused as refused:
        if refused.wait is not None:
            wait = str(refused.wait)
            said = f"Too many wrong keys were tried from your address. Try again in {wait} seconds."
            limited = page(request, "admin_signin.html", error=said, status=429)
            limited.headers["Retry-After"] = wait
            return limited
        caller = None
    if caller is None or not caller.admin:
        return page(request, "admin_signin.html", error="That is not this server's admin key.", status=401)
    log.info("admin: signed in on the web page")
    response = redirect(HOME)
    secure = request.url.scheme == "https"
    response.set_cookie(COOKIE, key, httponly=True, samesite="strict", secure=secure, path="/admin")
    return response


@router.post("/admin/signout")
async def signout(request: Request) -> Response:
    await _form(request)
    response = redirect("/admin/signin", "Signed out.")
    response.delete_cookie(COOKIE, httponly=True, samesite="strict", path="/admin")
    return response


@router.get("/admin")
async def dashboard(request: Request) -> Response:
    token = await _signed_in(request)
    if token is None:
        return redirect("/admin/signin")
    accounts = accounts_of(request)
    usage = dict((u.id, n) for u, n in await accounts.all_usage())
    memory = memory_of(request)
    return _page(
        request,
        "admin.html",
        token,
        members=await accounts.members(),
        usage=usage,
        mode=await accounts.server_mode(),
        modes=MODES,
        queue=await request.app.state.health.jobs(),
        chat_model=memory.chat.model_name if memory.chat else None,
        embedder=memory.embedder.model_name,
    )


@router.get("/admin/users/{user}")
async def person(request: Request, user: str) -> Response:
    token = await _signed_in(request)
    if token is None:
        return redirect("/admin/signin")
    return await _person(request, token, known_id(user, "user"))


async def _person(request: Request, token: str, user_id: str, *, made: str | None = None) -> Response:
    accounts = accounts_of(request)
    found = await accounts.existing_user_by_id(user_id)
    return _page(
        request,
        "admin_user.html",
        token,
        user=found,
        member=await accounts.member(found, await accounts.server_mode()),
        keys=await accounts.api_keys(found.id),
        usage=await accounts.usage(found.id),
        made=made,
    )


@router.get("/admin/users")
async def people(request: Request) -> Response:
    """Where a new person's key was shown, opened again: the list (the key is not shown twice)."""
    return redirect(HOME)


@router.post("/admin/users")
async def create_user(request: Request) -> Response:
    token, form = await _form(request)
    user, key, secret = await accounts_of(request).create_user(text(form, "name", MAX_NAME + 1))
    log.info("admin: created user %s with key %s", user.id, key.id)
    return await _person(request, token, user.id, made=secret)


@router.post("/admin/users/{user}/keys")
async def create_key(request: Request, user: str) -> Response:
    token, form = await _form(request)
    user_id = await _user_id(request, user)
    key, secret = await accounts_of(request).create_api_key(
        user_id, text(form, "name", MAX_NAME + 1) or "default"
    )
    log.info("admin: created key %s for user %s", key.id, user_id)
    return await _person(request, token, user_id, made=secret)


@router.post("/admin/users/{user}/keys/{key}/revoke")
async def revoke_key(request: Request, user: str, key: str) -> Response:
    await _form(request)
    user_id = await _user_id(request, user)
    revoked = await accounts_of(request).revoke_api_key(user_id, key)
    log.info("admin: revoked key %s of user %s", revoked.id, user_id)
    return redirect(f"/admin/users/{user_id}", f"Revoked the key {revoked.name!r}: it stops working at once.")


@router.post("/admin/users/{user}/budget")
async def budget(request: Request, user: str) -> Response:
    _, form = await _form(request)
    user_id = await _user_id(request, user)
    given = text(form, "tokens", 20)
    tokens = int(given) if given.isascii() and given.isdigit() and len(given) <= 12 else None
    if given and tokens is None:
        return redirect(f"/admin/users/{user_id}", "A budget is a whole number of tokens.", kind="error")
    await accounts_of(request).set_token_budget(user_id, tokens)
    log.info(
        "admin: set the daily budget of user %s to %s",
        user_id,
        tokens if tokens is not None else "the default",
    )
    return redirect(f"/admin/users/{user_id}", "Budget saved.")


@router.post("/admin/users/{user}/rename")
async def rename(request: Request, user: str) -> Response:
    _, form = await _form(request)
    user_id = await _user_id(request, user)
    try:
        await accounts_of(request).rename_user(user_id, text(form, "name", MAX_NAME + 1))
    except (InvalidInput, Conflict) as exc:
        return redirect(f"/admin/users/{user_id}", str(exc), kind="error")
    log.info("admin: renamed user %s", user_id)
    return redirect(f"/admin/users/{user_id}", "Renamed.")


@router.post("/admin/users/{user}/disable")
async def disable(request: Request, user: str) -> Response:
    return await _set_disabled(request, user, True)


@router.post("/admin/users/{user}/enable")
async def enable(request: Request, user: str) -> Response:
    return await _set_disabled(request, user, False)


async def _set_disabled(request: Request, user: str, disabled: bool) -> Response:
    await _form(request)
    user_id = await _user_id(request, user)
    await accounts_of(request).set_disabled(user_id, disabled)
    log.info("admin: %s user %s", "disabled" if disabled else "enabled", user_id)
    said = "Disabled: every key of the account is refused." if disabled else "Enabled: their keys work again."
    return redirect(f"/admin/users/{user_id}", said)


@router.post("/admin/mode")
async def mode(request: Request) -> Response:
    _, form = await _form(request)
    chosen = text(form, "mode", 40)
    if chosen not in MODES:
        return redirect(HOME, "Choose one of the memory modes.", kind="error")
    await accounts_of(request).set_server_mode(MemoryMode(chosen) if chosen else None)
    log.info("admin: set the server's memory mode to %s", chosen or "unset")
    return redirect(HOME, f"Memory mode: {chosen or 'unset (on)'}.")
