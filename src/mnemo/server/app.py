"""The HTTP server: one core (Memory, Accounts) and one worker per process, built at start-up."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI

from .. import web
from ..accounts import Accounts
from ..auth import Authenticator
from ..build import Core, open_core
from ..http import errors, timeouts
from ..mcp.http import McpEndpoint
from ..settings import Settings
from . import docs
from .routes import account, admin, agents, audit, chat, memories, review, turns

log = logging.getLogger(__name__)


async def bootstrap(accounts: Accounts, settings: Settings) -> str | None:
    """A key for the local user, so that one can begin at once: on the first start of an
    empty store, or when the local user was created (by the CLI) but never had a key."""
    user = await accounts.find_user(settings.user)
    if user is None:
        if await accounts.any_user():
            return None  # a deployment whose users were made by the admin: add no one
        user = await accounts.user(settings.user)
    elif await accounts.api_keys(user.id):
        return None  # it has (or had) keys: never mint one behind the person's back
    _, token = await accounts.create_api_key(user.id, "first start")
    return token


def create_app(settings: Settings, core: Core | None = None) -> FastAPI:
    """The ASGI app. Tests may hand in a Core; otherwise it is built from settings."""
    mcp = McpEndpoint(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        built = await core.open() if core is not None else await open_core(settings)
        token = await bootstrap(built.accounts, settings)
        if token:
            # printed, not logged: this is the only time the key exists in clear
            print(f"mnemo: created user {settings.user!r}. Its API key (shown once):\n  {token}", flush=True)
        app.state.memory = built.memory
        app.state.accounts = built.accounts
        app.state.authenticator = Authenticator.from_settings(built.accounts, settings)
        app.state.worker = built.worker() if settings.worker else None
        stop = asyncio.Event()
        task = asyncio.create_task(app.state.worker.run(stop)) if app.state.worker else None
        try:
            async with mcp.running():
                yield
        finally:
            stop.set()
            if task is not None:
                try:
                    await asyncio.wait_for(task, timeout=10)
                except TimeoutError:  # wait_for cancelled it: the job went back to the queue
                    log.warning("the worker did not finish its job in time; it was given back")
            await built.close()

    app = FastAPI(
        title="mnemo",
        version="0.1.0",
        summary="Long-term memory for personal AI assistants: learn, recall, correct, audit.",
        lifespan=lifespan,
        docs_url=None,  # docs.install serves /docs under the site's CSP
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    app.state.settings = settings
    errors.install(app)
    app.add_middleware(errors.BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(
        timeouts.BodyDeadline, gap=settings.read_timeout_seconds, total=settings.body_timeout_seconds
    )

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    for module in (memories, review, audit, account, admin, agents, turns, chat):
        app.include_router(module.router)
    docs.install(app)
    web.install(app)  # the person's page at /, outside the API's schema
    app.add_route(mcp.path, mcp, include_in_schema=False)
    return app
