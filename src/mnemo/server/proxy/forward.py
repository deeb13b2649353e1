"""One chat turn through the proxy: prepare, forward to the upstream, then store the turn.

Shared by /v1/chat/completions and the web page's "Try it", so that what a
person tries on the page is exactly what their assistants get: the same agent
choice, recall, injection, upstream call and storing of the turn (or not, when
memory is off).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from ...domain import User
from ...jobs import Worker
from ...memory import Memory
from ...settings import Settings
from .prepare import Prepared, prepare
from .upstream import Upstream
from .wire import ChatError, completion_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Forwarded:
    """The prepared request and the upstream's successful reply (unread when streamed)."""

    prepared: Prepared
    reply: httpx2.Response


@dataclass(frozen=True)
class Completed:
    """A finished, non-streamed turn: the upstream's reply, its text, and what was recalled for it."""

    prepared: Prepared
    reply: httpx2.Response
    text: str


async def forward(
    memory: Memory,
    settings: Settings,
    upstream: Upstream | None,
    user: User,
    body: dict[str, Any],
    headers: Mapping[str, str],
    *,
    stream: bool = False,
) -> Forwarded:
    """Recall, inject and send the request upstream; a ChatError says why not."""
    if upstream is None:
        raise ChatError(
            503,
            "no upstream model is configured: set MNEMO_UPSTREAM_BASE_URL (or MNEMO_LLM_BASE_URL)",
            "server_error",
            "upstream_not_configured",
        )
    prepared = await prepare(memory, settings, user, body, headers)
    return Forwarded(prepared, await upstream.chat(prepared.body, stream=stream))


async def remember(memory: Memory, worker: Worker | None, prepared: Prepared, reply: str) -> None:
    """Store the turn and queue its learning; a failure here is logged, never the client's problem."""
    turn = prepared.turn(reply)
    if turn is None:
        return
    try:
        job = await memory.submit(turn)  # None when memory is off or this is automation
    except Exception:
        log.exception("could not store a chat turn")
        return
    if job is not None and worker is not None:
        worker.wake()


async def complete(
    memory: Memory,
    settings: Settings,
    upstream: Upstream | None,
    worker: Worker | None,
    user: User,
    body: dict[str, Any],
    headers: Mapping[str, str],
) -> Completed:
    """A non-streamed turn, start to end. Stored before returning: once the caller has
    the reply, its turn is durable."""
    forwarded = await forward(memory, settings, upstream, user, body, headers)
    text = completion_text(forwarded.reply.content)
    await remember(memory, worker, forwarded.prepared, text)
    return Completed(forwarded.prepared, forwarded.reply, text)
