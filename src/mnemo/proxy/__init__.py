"""The OpenAI-compatible chat proxy: recall, inject, forward, relay, then remember.

- `wire`: the OpenAI wire format bits the proxy reads or writes (errors, texts, SSE).
- `prepare`: which agent, the persona, and the memory block, before forwarding.
- `upstream`: the one HTTP client to the model server, and its failures as answers.
- `relay`: a streamed reply passed through chunk by chunk, its turn stored once.
- `forward`: `Proxy`, one turn start to end (prepare, upstream, store), shared by the
  routes and, through the app that mounts both, the web page's Try it.
- `routes`: /v1/chat/completions and /v1/models.
"""

from __future__ import annotations

from fastapi import FastAPI

from . import routes


def install(app: FastAPI) -> None:
    """The proxy's routes; while the app runs, `app.state.proxy` is its Proxy (over the app's
    Memory, Accounts and settings, which the app's own lifespan sets first)."""
    app.include_router(routes.router)
