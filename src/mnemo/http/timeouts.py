"""Deadlines for clients that send slowly, so that a few cannot hold the server's connections open.

uvicorn limits only the idle time between requests (keep-alive); a request's headers or body may
arrive as slowly as the client likes. Two pieces bound them:

- `HeaderDeadline`, uvicorn's HTTP protocol with a timer: a request's headers must be complete
  within the read timeout of the connection opening, of the previous answer, or of their first byte.
  When it fires the connection is closed: there is no request yet to answer.
- `BodyDeadline`, an ASGI middleware: each part of a body must come within the read timeout of
  the last, and the whole body within the body timeout of the app's first read. The answer is 408,
  or, when the app had already begun another, that one is cut short and the connection closed.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..settings import Settings
from .errors import Refusal


def deadline_options(settings: Settings) -> dict[str, Any]:
    """What `uvicorn.run` or `uvicorn.Config` needs, beyond the app, to cut off slow headers."""
    return {"http": functools.partial(HeaderDeadline, read_timeout=settings.read_timeout_seconds)}


class HeaderDeadline(HttpToolsProtocol):
    """uvicorn's default protocol (httptools: mnemo depends on it), with the deadline on headers."""

    def __init__(self, *args: Any, read_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout = read_timeout
        self.header_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        if self.header_timer is None and not self.transport.is_closing():
            self.header_timer = self.loop.call_later(self.read_timeout, self.transport.close)

    def _disarm(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        # A pipelined request is already whole; otherwise what comes next (keep-alive's idle wait,
        # or a body the app never read, which resets that wait) gets the read timeout.
        waiting = not self.pipeline
        super().on_response_complete()
        if waiting:
            self._arm()


class BodyDeadline:
    """Answer 408 to a request whose body stops coming (`gap` seconds) or comes too slowly (`total`)."""

    def __init__(self, app: ASGIApp, gap: float, total: float) -> None:
        self.app = app
        self.gap = gap
        self.total = total

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        # and close: a client this slow is not kept for another request
        refusal = Refusal(408, headers={"Connection": "close"})
        deadline: float | None = None
        whole = False

        async def bounded() -> Message:
            nonlocal deadline, whole
            if whole:
                # no deadline on what follows: a streamed answer waits here for the client to leave
                return await receive()
            if deadline is None:  # from the app's first read: its own delay is not the client's
                deadline = loop.time() + self.total
            left = deadline - loop.time()
            try:
                message = await asyncio.wait_for(receive(), min(self.gap, left))
            except TimeoutError:
                if self.gap < left:
                    return refusal.refuse(f"the request body stopped arriving for {self.gap:g} s")
                return refusal.refuse(f"the request body took over {self.total:g} s to arrive")
            whole = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await refusal.run(self.app, scope, bounded, send)
