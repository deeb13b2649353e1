"""The tools over streamable HTTP at /mcp, for the user whose API key comes with each request.

Stateless and answering in plain JSON: every request stands on its own, so any of
several server processes can answer it and no session outlives a request. The
key is checked on every request by the same rule as the rest of the API (the
admin key is no user: 403); `X-Mnemo-Agent` (an agent's id or name) makes the
tools act as that agent by default, as it does for the chat proxy.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import HTTPException, Request, status
from fastapi.responses import JSONResponse
from mcp.server import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from ..auth import get_caller, get_user
from ..domain import find_agent
from ..http.errors import http_code
from ..http.headers import AGENT_HEADER
from ..settings import Settings
from .server import build_server
from .tools import Caller

PATH = "/mcp"
_CALLER = "mnemo.mcp.caller"  # where the authenticated caller waits in the request's state


class McpEndpoint:
    """The ASGI app for /mcp; `running()` must be entered by the app's lifespan."""

    path = PATH

    def __init__(self, settings: Settings) -> None:
        self.server = build_server(_caller_of)
        self._app = self.server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=settings.max_body_bytes,
            # The SDK guards loopback servers against DNS rebinding by Host; mnemo may sit
            # behind any name, and a rebinding page cannot send the key, which no cookie holds.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    def running(self) -> AbstractAsyncContextManager[None]:
        """The session manager's task group, in which every MCP request is served."""
        return self.server.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            user = await get_user(await get_caller(request))
            memory, accounts = request.app.state.memory, request.app.state.accounts
            agent = None
            if wanted := request.headers.get(AGENT_HEADER):
                agent = find_agent(await accounts.agents(user.id), wanted)
                if agent is None:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, f"no agent {wanted!r} for this user")
        except HTTPException as exc:
            body = {"error": {"message": str(exc.detail), "code": http_code(exc.status_code)}}
            await JSONResponse(body, status_code=exc.status_code, headers=exc.headers)(scope, receive, send)
            return
        scope.setdefault("state", {})[_CALLER] = Caller(memory, accounts, user, agent)
        await self._app(scope, receive, send)


async def _caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = request.scope.get("state", {}).get(_CALLER) if request is not None else None
    if caller is None:  # pragma: no cover - every request passes McpEndpoint first
        raise RuntimeError("an MCP request reached the tools without an authenticated caller")
    return caller
