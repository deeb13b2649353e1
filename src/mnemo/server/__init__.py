"""The HTTP API: /v1 routes over Memory and Accounts, /healthz, /readyz and /metrics (`health`),
and the reference at /docs.

Modules: `routes` (one per area), `params` (ids in paths, paging, scopes), `deps`
(what routes receive), `docs` (Swagger UI). Who is calling is mnemo.auth's; the
plumbing every face shares is mnemo.http's; the JSON shapes, which mnemo.client
reads too, are mnemo.schemas.
"""

from __future__ import annotations

from fastapi import FastAPI

from . import docs, health
from .routes import account, admin, agents, audit, conversations, erasures, memories, review, turns


def install(app: FastAPI) -> None:
    """The API's routes and its reference; the app must be built with docs_url=None."""

    app.include_router(health.router)
    for module in (memories, conversations, erasures, review, audit, account, admin, agents, turns):
        app.include_router(module.router)
    docs.install(app)
