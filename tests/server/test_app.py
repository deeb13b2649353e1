"""The server starts, prints a first key once, and guards every /v1 route."""

from __future__ import annotations

import httpx2

from tests.fakes.live_server import LiveServer


def test_first_start_prints_a_working_key_and_health_needs_none(server):
    assert server.token and server.token.startswith("mnemo_")
    assert httpx2.get(f"{server.base_url}/healthz").json() == {"status": "ok"}
    assert httpx2.get(f"{server.base_url}/docs").status_code == 200
    assert "/v1/memories" in httpx2.get(f"{server.base_url}/openapi.json").text


def test_a_second_start_creates_no_key(server_settings):
    with LiveServer(server_settings) as first:
        assert first.token
    with LiveServer(server_settings) as second:
        assert second.token is None
