"""A streamed reply, relayed chunk by chunk as it arrives, and its turn stored exactly once.

Not Starlette's StreamingResponse: when the client goes away it cancels the
relay wherever it happens to be, and if that is inside `send` rather than the
body iterator, the iterator's clean-up runs only when the garbage collector
gets to it. Here the end of the relay is explicit: whether the upstream
finished, broke off, or the client left, `finish` runs once, shielded from
cancellation, with the text that arrived.

The stream's closing `data: [DONE]` event is held back until the turn is
stored: an OpenAI client stops reading at `[DONE]`, before the body ends, and
its next request must find the turn there (`DoneHeld`).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping

import anyio
import httpx2
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .wire import StreamedText

log = logging.getLogger(__name__)

# the line of the stream's last event, "data: [DONE]", whichever line end (LF, CRLF or CR)
_DONE_LINE = re.compile(rb"(?:\A|(?<=[\r\n]))data: ?\[DONE\][ \t]*(?=[\r\n])")


class DoneHeld:
    """Splits relayed bytes so that the `[DONE]` event waits: `feed` answers what may go to the
    client now, `rest` what is left at the end (from the `[DONE]` line on, and a last line cut off).

    Only whole lines go out at once: a line split between two chunks waits for its end (a client
    acts on an event only at its blank line, so this delays nothing it could read), which lets a
    `[DONE]` split anywhere be seen.
    """

    def __init__(self) -> None:
        self._partial = b""  # the last line so far, not yet ended
        self._held = b""  # from the [DONE] line on

    def feed(self, chunk: bytes) -> bytes:
        if self._held:
            self._held += chunk
            return b""
        data = self._partial + chunk
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        whole, self._partial = data[:cut], data[cut:]
        done = _DONE_LINE.search(whole)
        if done is None:
            return whole
        self._held, self._partial = whole[done.start() :] + self._partial, b""
        return whole[: done.start()]

    def rest(self) -> bytes:
        return self._held + self._partial


class StreamRelay(Response):
    def __init__(
        self,
        upstream: httpx2.Response,
        headers: Mapping[str, str],
        finish: Callable[[str], Awaitable[None]],
    ) -> None:
        self.status_code = upstream.status_code
        self.background = None
        self.init_headers(headers)
        self._upstream = upstream
        self._finish = finish
        self._finished = False
        self._text = StreamedText()
        self._done = DoneHeld()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def relay() -> None:
                    await self._relay(send)
                    group.cancel_scope.cancel()

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()  # the client left: stop reading the upstream

                group.start_soon(relay)
                group.start_soon(watch)
        finally:
            with anyio.CancelScope(shield=True):
                await self._upstream.aclose()
                await self._finish_once()

    async def _relay(self, send: Send) -> None:
        try:
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            )
            async for chunk in self._upstream.aiter_raw():
                self._text.feed(chunk)
                if now := self._done.feed(chunk):
                    await send({"type": "http.response.body", "body": now, "more_body": True})
        except httpx2.HTTPError as exc:  # the status is sent already; all one can do is end the body
            log.warning("the upstream stream broke off: %r", exc)
        except OSError:  # ASGI 2.4 servers raise this from send when the client has gone
            return
        # Stored before [DONE] and the body's end, so a client that reads to either finds its turn.
        with anyio.CancelScope(shield=True):
            await self._finish_once()
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": self._done.rest(), "more_body": False})

    async def _finish_once(self) -> None:
        if self._finished:
            return
        self._finished = True
        try:
            await self._finish(self._text.text())
        except Exception:
            log.exception("could not store a streamed turn")
