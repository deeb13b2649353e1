"""The composition root of `mnemo serve`: one core per process, and the faces side by side over it.

The app opens the core (Memory, Accounts: mnemo.build), runs its job worker,
and mounts each face: the HTTP API (mnemo.server), the chat proxy
(mnemo.proxy), the person's web page (mnemo.web) and the MCP tools at /mcp
(mnemo.mcp). The faces import none of one another; each finds what it uses in
the app's state (`memory`, `accounts`, `settings`, `authenticator`), and the
one face that uses another, the web page's Try it, is handed the proxy here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from . import proxy, server, web
from .accounts import Accounts
from .auth import Authenticator
from .build import Core, open_core
from .domain import RecallVia, User
from .http import access_log, errors, timeouts
from .http.metrics import Metrics, RequestTimer
from .mcp.http import McpEndpoint
from .proxy.prepare import check_body
from .proxy.wire import ChatError
from .settings import Settings
from .web.chat import ChatRefused, Reply

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


class TryIt:
    """The web page's Try it (web.chat.Chat), through the chat proxy's own code: the same checks
    of the request, the same turn, the same storing of it as for a client of the proxy."""

    def __init__(self, app: FastAPI) -> None:
        self._state = app.state  # its proxy is made when the app starts

    @property
    def configured(self) -> bool:
        return self._state.proxy.upstream is not None

    async def reply(self, user: User, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        try:
            check_body(body)  # as the proxy checks what a client sends it
            done = await self._state.proxy.complete(user, body, headers, RecallVia.WEB)
        except ChatError as err:
            raise ChatRefused(err.status, err.message) from err
        problem = done.stored.reason if done.stored.failed else None
        return Reply(done.text, done.prepared.hits, problem, done.stored.turn_id)


def create_app(settings: Settings, core: Core | None = None) -> FastAPI:
    """The ASGI app. Tests may hand in a Core; otherwise it is built from settings."""
    mcp = McpEndpoint(settings)
    metrics = Metrics()  # this app's series (/metrics); a core handed in reports to its own observer

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        built = await core.open() if core is not None else await open_core(settings, metrics)
        token = await bootstrap(built.accounts, settings)
        if token:
            # printed, not logged: this is the only time the key exists in clear
            if settings.log_format == "json":
                print(
                    json.dumps({"created_user": settings.user, "api_key": token}, ensure_ascii=False),
                    flush=True,
                )
            else:
                print(
                    f"mnemo: created user {settings.user!r}. Its API key (shown once):\n  {token}", flush=True
                )
        app.state.memory = built.memory
        app.state.accounts = built.accounts
        app.state.authenticator = Authenticator.from_settings(built.accounts, settings, metrics)
        app.state.health = built.health()
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
        docs_url=None,  # server.docs serves /docs under the site's CSP
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    errors.install(app)
    app.add_middleware(errors.BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(
        timeouts.BodyDeadline, gap=settings.read_timeout_seconds, total=settings.body_timeout_seconds
    )
    app.add_middleware(RequestTimer, metrics=metrics)  # outermost: a refused body is timed too
    server.install(app)  # the API at /v1, /healthz, /readyz, /metrics and /docs
    proxy.install(app)  # /v1/chat/completions and /v1/models
    web.install(app, TryIt(app))  # the person's page at /, outside the API's schema
    # Starlette serves an ASGI app given as a route's endpoint; its annotation names only handlers
    app.add_route(mcp.path, mcp, include_in_schema=False)  # type: ignore[arg-type]
    access_log.name_routes(access_log.route_paths(app.routes))
    return app
