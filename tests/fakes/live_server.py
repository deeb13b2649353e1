"""A real `mnemo serve` (uvicorn) on loopback in a background thread, for HTTP tests."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import threading
import time
from types import TracebackType

import uvicorn

from mnemo.app import create_app
from mnemo.http.serving import uvicorn_options
from mnemo.settings import Settings


class LiveServer:
    """Starts on an ephemeral port; `token` is the key printed on first start (if any)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.base_url = ""
        self.token: str | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._printed = io.StringIO()
        self.app = None  # the ASGI app, once started (a test may reach its state: the store)

    def start(self) -> LiveServer:
        app = self.app = create_app(self.settings)
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="on",
            **uvicorn_options(self.settings),
        )
        self._server = uvicorn.Server(config)

        def serve() -> None:
            with contextlib.redirect_stdout(self._printed):
                asyncio.run(self._server.serve())

        self._thread = threading.Thread(target=serve, name="mnemo-live-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("mnemo server did not start")
            time.sleep(0.02)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        found = re.search(r"(mnemo_[0-9a-f]{16}_[A-Za-z0-9_-]+)", self._printed.getvalue())
        self.token = found.group(1) if found else None
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
