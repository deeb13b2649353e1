"""The server starts, prints a first key once, and guards every /v1 route."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from mnemo import Scope
from mnemo.build import open_memory
from tests.fakes.live_server import LiveServer

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)


def test_first_start_prints_a_working_key_and_health_needs_none(server):
    assert server.token and server.token.startswith("mnemo_")
    assert httpx2.get(f"{server.base_url}/healthz").json() == {"status": "ok"}
    assert httpx2.get(f"{server.base_url}/docs").status_code == 200
    assert "/v1/memories" in httpx2.get(f"{server.base_url}/openapi.json", timeout=60).text


def test_the_schema_declares_its_bearer_key_on_every_route_that_needs_one(server):
    schema = httpx2.get(f"{server.base_url}/openapi.json", timeout=60).json()
    assert schema["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A person's API key (mnemo_…), or the admin key.",
    }
    needs = {
        (path, method): op.get("security")
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if path.startswith("/v1/")
    }
    assert needs and all(s == [{"apiKey": []}] for s in needs.values()), needs
    assert "security" not in schema["paths"]["/healthz"]["get"]


def test_a_second_start_creates_no_key(server_settings):
    with LiveServer(server_settings) as first:
        assert first.token
    with LiveServer(server_settings) as second:
        assert second.token is None


def test_a_local_user_made_by_the_cli_still_gets_a_key_on_first_serve(server_settings):
    async def add_with_the_cli_first():
        memory = await open_memory(server_settings)
        user = await memory.accounts.user(server_settings.user)
        await memory.add(Scope(user.id), "I keep bees")
        await memory.close()

    asyncio.run(add_with_the_cli_first())
    with LiveServer(server_settings) as live:
        assert live.token
        listed = httpx2.get(
            f"{live.base_url}/v1/memories", headers={"Authorization": f"Bearer {live.token}"}
        ).json()
        assert [f["text"] for f in listed["items"]] == ["I keep bees"]
