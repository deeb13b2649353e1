"""Helpers for the chat proxy tests (this module holds no tests of its own).

The proxy's effects (stored turns, queued jobs, facts) are read from the
server's database through a second store beside it (on SQLite, WAL lets both
work at once, and the vector cache notices the other connection's writes by
the per-user generation). That also seeds facts and agents without depending
on the memories and agents routes.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

from mnemo.build import build_store
from mnemo.domain import Agent, Fact, Job, JobStatus, Message, Scope
from mnemo.memory import Memory
from mnemo.settings import Settings
from tests.server.processes import free_port, wait_until  # noqa: F401 (shared with the chat tests)

OPEN = (JobStatus.PENDING, JobStatus.CLAIMED)


class StoreView:
    """The server's database, opened beside the running server, with a loop of its own."""

    def __init__(self, settings: Settings, embedder) -> None:
        self._runner = asyncio.Runner()
        self.store = build_store(settings)
        self.memory = Memory(self.store, embedder, settings=settings)
        self.run(self.store.open())
        user = self.run(self.store.find_user(settings.user))
        assert user is not None, "the server creates its first user on start"
        self.user_id = user.id

    def run(self, coro):
        return self._runner.run(coro)

    def close(self) -> None:
        self.run(self.store.close())
        self._runner.close()

    def jobs(self) -> list[Job]:
        return self.run(self.store.list_jobs(self.user_id, limit=1000))

    def messages(self, job: Job) -> list[Message]:
        return self.run(self.store.job_messages(job))

    def facts(self, agent_id: str | None = None) -> list[Fact]:
        return self.run(self.memory.list(Scope(self.user_id, agent_id, all_agents=agent_id is None)))

    def add_fact(self, text: str, agent_id: str | None = None) -> Fact:
        return self.run(self.memory.add(Scope(self.user_id, agent_id), text))

    def agent(self, name: str, **fields: Any) -> Agent:
        return self.run(self.memory.accounts.create_agent(self.user_id, name, **fields))

    def memory_switch(self, enabled: bool | None) -> None:
        self.run(self.memory.accounts.set_user_switch(self.user_id, enabled))

    def settled_jobs(self, count: int, timeout: float = 15.0) -> list[Job]:
        """Wait until `count` jobs exist and none is still to run; a failed one fails the test."""
        jobs = wait_until(lambda: _settled(self.jobs(), count), timeout, f"{count} finished job(s)")
        failed = [j for j in jobs if j.status == JobStatus.FAILED or j.last_error]
        assert not failed, [j.last_error for j in failed]
        return jobs


def _settled(jobs: list[Job], count: int) -> list[Job] | None:
    if len(jobs) > count:
        raise AssertionError(f"{len(jobs)} jobs, expected {count}")
    return jobs if len(jobs) == count and not any(j.status in OPEN for j in jobs) else None


@pytest.fixture
def view(server, server_settings, embedder) -> Iterator[StoreView]:
    v = StoreView(server_settings, embedder)
    yield v
    v.close()


def chat_client(server, **kwargs: Any) -> openai.OpenAI:
    """The official client pointed at mnemo; no retries, so each call is one request."""
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key=server.token, max_retries=0, **kwargs)


@pytest.fixture
def ai(server) -> Iterator[openai.OpenAI]:
    with chat_client(server) as client:
        yield client


def proxied(scripted_llm) -> list[dict[str, Any]]:
    """The chat requests the proxy forwarded (extraction requests carry a response_format)."""
    return [r for r in scripted_llm.chat_requests() if "response_format" not in r]


class DripUpstream:
    """An upstream that streams its first chunk, then holds the rest until `release()`:
    a client can leave in the middle of a reply."""

    def __init__(self, first: str, rest: str) -> None:
        self.first, self.rest = first, rest
        self.released = threading.Event()
        self.finished = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        drip = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    self._event({"role": "assistant", "content": drip.first})
                    drip.released.wait(30)
                    self._event({"content": drip.rest})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except OSError:
                    pass
                finally:
                    drip.finished.set()

            def _event(self, delta: dict[str, Any]) -> None:
                chunk = {
                    "id": "chatcmpl-drip",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "drip",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

        return Handler
