"""The client tries 429 and 503 again after the answer's Retry-After, within its bounds; a
small server on loopback answers as told and counts what it was sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from mnemo.client import NEVER, AsyncClient, Client, RateLimited, Retry, Unavailable
from mnemo.client.retry import retry_after

pytestmark = pytest.mark.slow

ME = {
    "user": {"id": "u1", "name": "ana"},
    "enable_memory": True,
    "memory_enabled": None,
    "server_memory_mode": "enabled_default_on",
    "review_policy": "auto",
    "record_recalls": True,
    "sensitive_gate": {},
}


class Scripted(ThreadingHTTPServer):
    """Answers each request with the next (status, headers) of `script`, then 200 with ME."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[tuple[int, dict[str, str]]] = []
        self.seen: list[tuple[str, float]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Scripted

    def _answer(self) -> None:
        self.server.seen.append((self.command, time.monotonic()))
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        status, headers = self.server.script.pop(0) if self.server.script else (200, {})
        ok = ME if self.path.startswith("/v1/me") else {"queued": False, "reason": "memory is off for you"}
        body = json.dumps(ok if status == 200 else {"error": {"message": "busy"}}).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_503_is_tried_again_after_its_retry_after(scripted):
    scripted.script = [(503, {"Retry-After": "1"})]
    with Client(scripted.url, key="k") as client:
        assert client.me().user.name == "ana"
    (_, first), (_, second) = scripted.seen
    assert second - first >= 1.0


async def test_a_429_with_an_http_date_is_honoured_by_the_async_client(scripted):
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    scripted.script = [(429, {"Retry-After": when})]
    async with AsyncClient(scripted.url, key="k") as client:
        assert (await client.me()).user.name == "ana"
    (_, first), (_, second) = scripted.seen
    assert second - first >= 0.9  # the date has a one-second resolution


def test_a_post_is_tried_again_on_503_which_stored_nothing(scripted):
    scripted.script = [(503, {"Retry-After": "0"})]
    with Client(scripted.url, key="k") as client:
        assert client.submit_turn([{"role": "user", "content": "hi"}]).queued is False
    assert [m for m, _ in scripted.seen] == ["POST", "POST"]


def test_the_tries_are_bounded_and_the_last_answer_is_raised(scripted):
    scripted.script = [(503, {"Retry-After": "0"})] * 5
    with (
        Client(scripted.url, key="k", retry=Retry(attempts=3)) as client,
        pytest.raises(Unavailable) as gave_up,
    ):
        client.me()
    assert len(scripted.seen) == 3 and gave_up.value.status == 503 and gave_up.value.message == "busy"


def test_a_wait_past_the_total_is_not_waited(scripted):
    scripted.script = [(429, {"Retry-After": "3600"})]
    with Client(scripted.url, key="k") as client, pytest.raises(RateLimited) as refused:
        client.me()
    assert len(scripted.seen) == 1 and refused.value.retry_after == 3600


def test_never_tries_once(scripted):
    scripted.script = [(503, {})]
    with Client(scripted.url, key="k", retry=NEVER) as client, pytest.raises(Unavailable):
        client.me()
    assert len(scripted.seen) == 1


def test_no_server_is_unavailable_after_bounded_tries():
    client = Client("http://127.0.0.1:9", retry=Retry(attempts=2, backoff=0.01))
    with client, pytest.raises(Unavailable) as gone:
        client.add("I live in Porto")
    assert gone.value.status == 0 and "no answer" in gone.value.message


def test_retry_after_reads_seconds_and_dates():
    def header(value: str) -> float | None:
        return retry_after(httpx2.Response(503, headers={"Retry-After": value}))

    assert header("7") == 7.0
    assert header("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date past: now
    assert 50 < header(format_datetime(datetime.now(UTC) + timedelta(minutes=1), usegmt=True)) <= 60
    assert header("soon") is None and header("-3") is None
    assert retry_after(httpx2.Response(503)) is None
