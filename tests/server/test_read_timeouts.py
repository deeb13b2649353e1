"""Clients that send slowly are cut off (http/timeouts.py): headers within the read timeout, each
part of a body within it, and the whole body within the body timeout; prompt clients are served.

Real servers on loopback, written to over raw sockets. Timeouts do not depend on the store, so these
run on SQLite only."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx2
import pytest

from mnemo.settings import Settings
from tests.fakes.live_server import LiveServer
from tests.server.processes import Serve, environment

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

READ = 1.0  # seconds: the read timeout of the servers below
BODY = 3.0  # seconds: their whole-body timeout
SLACK = 1.5  # seconds a loaded machine may add before the cut is seen


@pytest.fixture
def server(tmp_path) -> Iterator[LiveServer]:
    settings = Settings(data_dir=tmp_path, read_timeout_seconds=READ, body_timeout_seconds=BODY)
    with LiveServer(settings) as live:
        yield live


def connect(base_url: str) -> socket.socket:
    address = urlsplit(base_url)
    return socket.create_connection((address.hostname, address.port), timeout=10)


def closed_after(sock: socket.socket, drip: bytes = b"", every: float = 0.25, within: float = 15) -> tuple:
    """Send `drip` every `every` seconds (nothing if empty) until the server closes the connection:
    what it answered, and how many seconds that took. Fails if it is still open after `within`."""
    start = time.monotonic()
    answer = b""
    sock.settimeout(every)
    while time.monotonic() - start < within:
        try:
            if drip:
                sock.sendall(drip)
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return answer, time.monotonic() - start
        if not chunk:
            return answer, time.monotonic() - start
        answer += chunk
    raise AssertionError(f"the connection was still open after {within} s; it answered {answer!r}")


def post_head(server: LiveServer, length: int) -> bytes:
    return (
        "POST /v1/memories HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def test_slow_headers_are_cut_off(server):
    with connect(server.base_url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        answer, took = closed_after(sock, drip=b"X-Slow: 1\r\n")
    assert answer == b"" and READ * 0.8 <= took <= READ + SLACK, (answer, took)

    with connect(server.base_url) as silent:
        answer, took = closed_after(silent)
    assert answer == b"" and READ * 0.8 <= took <= READ + SLACK, (answer, took)

    # headers that arrive in parts, in time, are served; so is a plain request
    with connect(server.base_url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        time.sleep(READ / 2)
        sock.sendall(b"Connection: close\r\n\r\n")
        answer, _ = closed_after(sock)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'{"status":"ok"}'), answer
    assert httpx2.get(f"{server.base_url}/healthz").status_code == 200


def test_a_connection_kept_open_after_its_answer_is_cut_off_when_it_trickles(server):
    """A body the route never read keeps arriving after the answer: the next request's headers
    never start, and the read timeout ends it."""
    with connect(server.base_url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n")
        answer, took = closed_after(sock, drip=b"x")
    assert answer.startswith(b"HTTP/1.1 200") and took <= READ + SLACK, (answer, took)


def test_slow_body_is_cut_off(server):
    body = json.dumps({"text": "I keep bees on my balcony"}).encode()
    with connect(server.base_url) as sock:
        sock.sendall(post_head(server, len(body)) + body[:10])
        answer, took = closed_after(sock)
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer
    assert json.loads(payload)["error"]["message"] == f"the request body stopped arriving for {READ:g} s"
    assert READ * 0.8 <= took <= READ + SLACK, took

    # the same body in two parts, each in time, is read whole
    with connect(server.base_url) as sock:
        sock.sendall(post_head(server, len(body)) + body[:10])
        time.sleep(READ / 2)
        sock.sendall(body[10:])
        sock.settimeout(10)
        assert sock.recv(65536).startswith(b"HTTP/1.1 201")
    listed = httpx2.get(
        f"{server.base_url}/v1/memories", headers={"Authorization": f"Bearer {server.token}"}
    ).json()
    assert [f["text"] for f in listed["items"]] == ["I keep bees on my balcony"]


def test_a_body_that_trickles_is_cut_off_at_the_body_timeout(server):
    with connect(server.base_url) as sock:
        sock.sendall(post_head(server, 10_000))
        answer, took = closed_after(sock, drip=b" ", every=READ / 4)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"the request body took over 3 s" in answer
    assert BODY * 0.9 <= took <= BODY + SLACK, took


def test_mnemo_serve_takes_its_read_timeout_from_the_environment(tmp_path, scripted_llm, processes):
    env = environment(tmp_path / "data", scripted_llm)
    env["MNEMO_READ_TIMEOUT_SECONDS"] = str(READ)
    serve = Serve(env, tmp_path / "serve.log")
    processes.append(serve.process)
    with connect(serve.base_url) as silent:
        answer, took = closed_after(silent)
    assert answer == b"" and READ * 0.8 <= took <= READ + SLACK, (answer, took)
    assert httpx2.get(f"{serve.base_url}/healthz").status_code == 200
