"""Templates (Jinja2, autoescaped), their filters, and the answers pages send.

A flash message is the one line a page says after a change ("Retracted …"):
it rides on the redirect in a short-lived cookie and is shown, then dropped,
by the next page.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from ..domain import Fact, as_utc, is_uuid, utcnow
from ..http.headers import HEADERS
from ..wording import plural
from .history import rests_on, source_label

FLASH_COOKIE = "mnemo_flash"


def when(value: datetime | str | None) -> str:
    """A time as people read it, in UTC: 2026-03-01 12:00 UTC."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    # isoformat, not strftime: the year 874 is "0874" (strftime's %Y writes "874")
    return as_utc(value).isoformat(sep=" ", timespec="minutes")[:16] + " UTC"


_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60))


def ago(value: datetime, now: datetime) -> str:
    """How long before `now` a time was, as people say it: "just now", "3 days ago", "2 years
    ago" (or, for a time after `now`, "in 3 days"); whole units, rounded down, months and
    years by the calendar."""
    then, now = as_utc(value), as_utc(now)
    later = then > now
    early, late = (now, then) if later else (then, now)
    months = (late.year - early.year) * 12 + late.month - early.month
    if (late.day, late.timetz()) < (early.day, early.timetz()):
        months -= 1
    seconds = (late - early).total_seconds()
    spans = [("year", months // 12), ("month", months)] + [(u, int(seconds // s)) for u, s in _UNITS]
    for unit, count in spans:
        if count > 0:
            said = plural(count, unit)
            return f"in {said}" if later else f"{said} ago"
    return "just now"


def iso(value: datetime | None) -> str:
    return as_utc(value).isoformat() if value else ""


def percent(value: float | None) -> str:
    return "—" if value is None else f"{round(value * 100)}%"


environment = Environment(
    loader=PackageLoader("mnemo.web", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def end_day(value: datetime) -> str:
    """The day (YYYY-MM-DD, UTC) at whose end a memory stops being true: the page's form."""
    return (as_utc(value) - timedelta(microseconds=1)).date().isoformat()


def ended(fact: Fact) -> bool:
    """Active, and past the end it was given (Fact.ended, as of now)."""
    return fact.ended(utcnow())


environment.filters.update(when=when, iso=iso, percent=percent, ago=ago, end_day=end_day)
environment.globals.update(plural=plural, source_text=source_label, rests_on=rests_on, ended=ended)


def page(request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """A page, with the signed-in session (if any) and the flash messages waiting for it."""
    flashes = _read_flash(request)
    session = getattr(request.state, "session", None)
    html = environment.get_template(template).render(
        request=request, session=session, flashes=flashes, no_chat_model=_no_chat_model(request), **context
    )
    response = HTMLResponse(html, status_code=status, headers=HEADERS)
    if flashes:
        response.delete_cookie(FLASH_COOKIE, path="/", httponly=True, samesite="strict")
    return response


def _no_chat_model(request: Request) -> bool:
    """Turns wait for a chat model (learning only what is asked for explicitly) exactly when the
    server has none: it queues them all again once it has one. The server's own setting, read
    without asking the store on every page."""
    memory = getattr(request.app.state, "memory", None)
    return memory is not None and memory.chat is None


def redirect(
    url: str, flash: str | None = None, *, kind: str = "ok", undo: Fact | None = None
) -> RedirectResponse:
    """See Other (a POST's answer): the browser GETs `url`, which shows `flash`; with `undo`
    (the memory as the action left it), an Undo button beside it (Memory.undo)."""
    response = RedirectResponse(url, status_code=303, headers=HEADERS)
    if flash:
        said: dict[str, object] = {"kind": kind, "text": flash[:500]}
        if undo is not None:
            said["undo"] = {"id": undo.id, "version": undo.version}
        payload = json.dumps(said).encode()
        value = base64.urlsafe_b64encode(payload).decode()
        response.set_cookie(FLASH_COOKIE, value, max_age=60, path="/", httponly=True, samesite="strict")
    return response


MAX_FLASH = 2000  # characters of a flash cookie: 500 of text and an undo, base64, fit well under


def _read_flash(request: Request) -> list[dict[str, Any]]:
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw or len(raw) > MAX_FLASH:  # ours are short: a long one is none of ours
        return []
    try:
        data = json.loads(base64.urlsafe_b64decode(raw.encode()))
        flash: dict[str, Any] = {"kind": str(data["kind"]), "text": str(data["text"])}
        undo = data.get("undo")
        if isinstance(undo, dict) and is_uuid(str(undo.get("id"))) and isinstance(undo.get("version"), int):
            flash["undo"] = {"id": str(undo["id"]), "version": int(undo["version"])}
        return [flash]
    except Exception:  # whatever a cookie holds (a nest past the parser's depth too), no flash
        return []


def local_path(value: object, default: str) -> str:
    """A place on this site to go back to; anything else (another site, a scheme) gives `default`."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return default
    return value
