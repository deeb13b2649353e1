"""Client (blocking) and AsyncClient: every request of calls.py, as a method of each.

`Client("http://127.0.0.1:8420", key="mnemo_…")`; the key may also come from
MNEMO_API_KEY and the address from MNEMO_URL.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx2

from ..schemas import FactPublic
from . import calls
from .calls import Call
from .retry import Retry
from .tries import Tries

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8420"


def _options(url: str | None, key: str | None, timeout: float) -> dict[str, Any]:
    token = key if key is not None else os.environ.get("MNEMO_API_KEY")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {
        "base_url": url or os.environ.get("MNEMO_URL") or DEFAULT_URL,
        "headers": headers,
        "timeout": timeout,
    }


def _request(call: Call[Any]) -> dict[str, Any]:
    return {"method": call.method, "url": call.path, "params": call.params, "json": call.json()}


def _bind(make: Callable[P, Call[T]]) -> Callable[Concatenate[Client, P], T]:
    def method(self: Client, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(make(*args, **kwargs))

    method.__name__, method.__doc__ = make.__name__, make.__doc__
    return method


def _abind(make: Callable[P, Call[T]]) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    async def method(self: AsyncClient, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(make(*args, **kwargs))

    method.__name__, method.__doc__ = make.__name__, make.__doc__
    return method


class Client:
    """The API over HTTP, blocking. Errors are mnemo.client.errors' exceptions; 429 and 503
    are tried again as `retry` says (mnemo.client.retry)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        key: str | None = None,
        timeout: float = 30.0,
        retry: Retry | None = None,
        http: httpx2.Client | None = None,
    ) -> None:
        self.retry = retry or Retry()
        self.http = http or httpx2.Client(**_options(url, key, timeout))

    def send(self, call: Call[T]) -> T:
        tries = Tries(self.retry, call)
        while True:
            try:
                response = self.http.request(**_request(call))
            except httpx2.TransportError as failure:
                wait = tries.failed(failure)
            else:
                answered = tries.answered(response)
                if answered is None:
                    return tries.result(response)
                wait = answered
            time.sleep(wait)

    def all_memories(self, *, page_size: int = 200, **filters: Any) -> Iterator[FactPublic]:
        """Every memory `memories(**filters)` would page through, page by page."""
        offset: int | None = 0
        while offset is not None:
            page = self.memories(limit=page_size, offset=offset, **filters)
            yield from page.items
            offset = page.next_offset

    add = _bind(calls.add)
    get = _bind(calls.get)
    memories = _bind(calls.memories)
    update = _bind(calls.update)
    retract = _bind(calls.retract)
    restore = _bind(calls.restore)
    history = _bind(calls.history)
    search = _bind(calls.search)
    erase = _bind(calls.erase)
    preview_erasure = _bind(calls.preview_erasure)
    receipts = _bind(calls.receipts)
    receipt = _bind(calls.receipt)
    review = _bind(calls.review)
    approve = _bind(calls.approve)
    reject = _bind(calls.reject)
    stale = _bind(calls.stale)
    conversations = _bind(calls.conversations)
    conversation = _bind(calls.conversation)
    keep = _bind(calls.keep)
    submit_turn = _bind(calls.submit_turn)
    turns = _bind(calls.turns)
    turn = _bind(calls.turn)
    agents = _bind(calls.agents)
    create_agent = _bind(calls.create_agent)
    update_agent = _bind(calls.update_agent)
    delete_agent = _bind(calls.delete_agent)
    me = _bind(calls.me)
    update_settings = _bind(calls.update_settings)
    keys = _bind(calls.keys)
    create_key = _bind(calls.create_key)
    revoke_key = _bind(calls.revoke_key)
    usage = _bind(calls.usage)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """The API over HTTP, for asyncio: the methods of Client, awaited."""

    def __init__(
        self,
        url: str | None = None,
        *,
        key: str | None = None,
        timeout: float = 30.0,
        retry: Retry | None = None,
        http: httpx2.AsyncClient | None = None,
    ) -> None:
        self.retry = retry or Retry()
        self.http = http or httpx2.AsyncClient(**_options(url, key, timeout))

    async def send(self, call: Call[T]) -> T:
        tries = Tries(self.retry, call)
        while True:
            try:
                response = await self.http.request(**_request(call))
            except httpx2.TransportError as failure:
                wait = tries.failed(failure)
            else:
                answered = tries.answered(response)
                if answered is None:
                    return tries.result(response)
                wait = answered
            await asyncio.sleep(wait)

    async def all_memories(self, *, page_size: int = 200, **filters: Any) -> AsyncIterator[FactPublic]:
        """Every memory `memories(**filters)` would page through, page by page."""
        offset: int | None = 0
        while offset is not None:
            page = await self.memories(limit=page_size, offset=offset, **filters)
            for fact in page.items:
                yield fact
            offset = page.next_offset

    add = _abind(calls.add)
    get = _abind(calls.get)
    memories = _abind(calls.memories)
    update = _abind(calls.update)
    retract = _abind(calls.retract)
    restore = _abind(calls.restore)
    history = _abind(calls.history)
    search = _abind(calls.search)
    erase = _abind(calls.erase)
    preview_erasure = _abind(calls.preview_erasure)
    receipts = _abind(calls.receipts)
    receipt = _abind(calls.receipt)
    review = _abind(calls.review)
    approve = _abind(calls.approve)
    reject = _abind(calls.reject)
    stale = _abind(calls.stale)
    conversations = _abind(calls.conversations)
    conversation = _abind(calls.conversation)
    keep = _abind(calls.keep)
    submit_turn = _abind(calls.submit_turn)
    turns = _abind(calls.turns)
    turn = _abind(calls.turn)
    agents = _abind(calls.agents)
    create_agent = _abind(calls.create_agent)
    update_agent = _abind(calls.update_agent)
    delete_agent = _abind(calls.delete_agent)
    me = _abind(calls.me)
    update_settings = _abind(calls.update_settings)
    keys = _abind(calls.keys)
    create_key = _abind(calls.create_key)
    revoke_key = _abind(calls.revoke_key)
    usage = _abind(calls.usage)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
