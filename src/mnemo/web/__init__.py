"""The person's web page, served by `mnemo serve` at `/`: read, correct, review, audit, try.

Server-rendered (Jinja2, autoescaped) with a little vanilla JavaScript that
only adds comfort; every page acts through the `Memory` facade in the
signed-in person's own scope. Modules by area: `session` (sign-in cookie,
form tokens), `render` (templates, answers), `routing` (error pages), then
one module of routes per page: `auth`, `memories`, `facts`, `review`,
`account` (settings), `audit` (and the export), `chat` (try it).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from . import account, audit, auth, chat, facts, memories, review

STATIC = Path(__file__).parent / "static"


def install(app: FastAPI) -> None:
    for module in (auth, memories, facts, review, account, audit, chat):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
