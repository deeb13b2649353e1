"""The person's web page, served by `mnemo serve` at `/`: read, correct, review, audit, try.

Server-rendered (Jinja2, autoescaped) with a little vanilla JavaScript that
only adds comfort; every page acts through Memory (facts) and Accounts (the
settings page) in the signed-in person's own scope, as the app's state holds
them. Modules by area: `session` (sign-in cookie, form tokens), `render`
(templates, answers), `routing` (error pages), then one module of routes per
page: `auth`, `memories`, `facts`, `review`, `activity` (turns and what they taught),
`account` (settings), `audit`
(and the export), `chat` (try it, through the `Chat` the app hands in).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from . import (
    account,
    activity,
    audit,
    auth,
    chat,
    conversations,
    erasure,
    facts,
    memories,
    receipts,
    review,
    stale,
)
from .chat import Chat

STATIC = Path(__file__).parent / "static"


def install(app: FastAPI, try_it: Chat) -> None:
    """The pages at / (outside the API's schema); `try_it` answers the Try it page."""
    app.state.web_chat = try_it
    pages = (
        auth,
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
