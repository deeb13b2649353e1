"""The person's web page, served by `mnemo serve` at `/`: read, correct, review, audit, try.

Server-rendered (Jinja2, autoescaped) with a little vanilla JavaScript that
only adds comfort; every page acts through Memory (facts) and Accounts (the
settings page) in the signed-in person's own scope, as the app's state holds
them. Modules by area: `session` (sign-in cookie, form tokens), `render`
(templates, answers), `routing` (error pages), then one module of routes per
page: `auth`, `memories`, `facts`, `review`, `stale` (still true?), `conversations`,
`receipts`, `activity` (turns and what they taught), `account` (settings), `audit` (and the
export), `chat` (try it, through the `Chat` the app hands in). An address that is no page, or
that takes only a form, answers a browser with a page too (`install`).
"""

from __future__ import annotations

import inspect
from pathlib import Path

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

from . import (
    account,
    activity,
    admin,
    audit,
    auth,
    chat,
    conversations,
    erasure,
    facts,
    memories,
    receipts,
    review,
    routing,
    stale,
)
from .chat import Chat

STATIC = Path(__file__).parent / "static"


def install(app: FastAPI, try_it: Chat) -> None:
    """The pages at / (outside the API's schema); `try_it` answers the Try it page."""
    app.state.web_chat = try_it
    pages = (
        auth,
        admin,
        memories,
        facts,
        review,
        stale,
        activity,
        account,
        audit,
        chat,
        erasure,
        receipts,
        conversations,
    )
    for module in pages:
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    answer_json = app.exception_handlers[HTTPException]

    async def http_error(request: Request, exc: Exception) -> Response:
        """A browser asking for an address of the page's that is none, or that takes a form
        only (a bookmarked button, a reload after it), gets a page that says so; the rest, as
        the API answers."""
        assert isinstance(exc, HTTPException)
        if exc.status_code in PAGE_ERRORS and _a_browser_on_a_page(request):
            title, message = PAGE_ERRORS[exc.status_code]
            answer = routing.error_page(request, exc.status_code, title, message)
            answer.headers.update(exc.headers or {})
            return answer
        answered = answer_json(request, exc)
        return await answered if inspect.isawaitable(answered) else answered

    app.add_exception_handler(HTTPException, http_error)


PAGE_ERRORS = {
    404: ("Not found", "There is nothing here, or it is not yours to see."),
    405: (
        "Use the page's button",
        "This address takes a form sent from its page: go back, and use the button there.",
    ),
}
NOT_PAGES = ("/v1/", "/mcp/", "/static/")  # and these addresses themselves
NOT_PAGE = {"/mcp", "/healthz", "/readyz", "/metrics", "/docs", "/openapi.json"}


def _a_browser_on_a_page(request: Request) -> bool:
    path = request.url.path
    accepts = request.headers.get("accept", "")
    return "text/html" in accepts and path not in NOT_PAGE and not path.startswith(NOT_PAGES)
