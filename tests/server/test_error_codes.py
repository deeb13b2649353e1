"""Every error answer carries a stable code (docs/reference/errors.md), whatever its wording:
the HTTP API's body, the Python client's exception, an MCP tool's error. Both backends."""

from __future__ import annotations

import httpx2
import pytest

from mnemo.client import Client, Conflict, NotFound
from tests.mcp.conftest import over_http
from tests.server.api import add, client_for, ok
from tests.server.conftest import ADMIN_KEY

pytestmark = pytest.mark.slow  # a real server each test

NOBODY = "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"


def _code(reply: httpx2.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    return reply.json()["error"]["code"]


def test_the_api_says_which_error_by_a_code_that_does_not_change_with_the_words(server, client, admin):
    fact = add(client, "I live in Lisbon")
    assert _code(client.get(f"/v1/memories/{NOBODY}"), 404) == "not_found"
    stale = client.patch(f"/v1/memories/{fact['id']}", json={"version": 7, "text": "I live in Porto"})
    assert _code(stale, 409) == "version_conflict"
    secret = client.post("/v1/memories", json={"text": "My shop key is sk_live_4eC39HqLyjWDarjtT1zdp7dc"})
    assert _code(secret, 422) == "blocked_sensitive" and "4eC39" not in secret.text
    purged = add(client, "My locker code is 4412")
    ok(client.delete(f"/v1/memories/{purged['id']}", params={"purge": "true"}))
    assert _code(client.post(f"/v1/memories/{purged['id']}/restore"), 422) == "invalid_input"
    assert _code(client.post("/v1/memories", json={"txet": "x"}), 422) == "invalid_request"
    assert _code(client.get("/v1/nothing-here"), 404) == "not_found"
    assert _code(client.get("/v1/admin/users"), 403) == "forbidden"
    with client_for(server, "mnemo_0123456789abcdef_wrongwrongwrongwrongwrong") as wrong:
        assert _code(wrong.get("/v1/me"), 401) == "unauthorized"
    with client_for(server, None) as nobody:
        assert _code(nobody.get("/v1/me"), 401) == "unauthorized"
    bob = ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)["user"]["id"]
    assert _code(admin.post("/v1/admin/users", json={"name": "bob"}), 409) == "name_taken"
    ok(admin.post("/v1/admin/users", json={"name": "carol"}), 201)
    assert _code(admin.patch(f"/v1/admin/users/{bob}", json={"name": "carol"}), 409) == "name_taken"
    assert _code(
        client.post("/v1/memories", json={"text": "x"}, headers={"content-type": "text/plain"}), 422
    ) == ("invalid_request")
    assert _code(client.put("/v1/me"), 405) == "method_not_allowed"


def test_the_python_client_and_mcp_carry_the_same_codes(server, client):
    fact = add(client, "I live in Lisbon")
    with Client(server.base_url, key=server.token) as mine:
        with pytest.raises(NotFound) as missing:
            mine.get(NOBODY)
        assert missing.value.code == "not_found" and missing.value.status == 404
        with pytest.raises(Conflict) as stale:
            mine.update(fact["id"], version=9, text="I live in Porto")
        assert stale.value.code == "version_conflict"
    with Client(server.base_url, key=ADMIN_KEY) as admin, pytest.raises(Exception) as refused:
        admin.memories()
    assert getattr(refused.value, "code", None) == "forbidden"


async def test_an_mcp_tools_error_carries_its_code_in_meta(server, client):
    fact = add(client, "I live in Lisbon")
    async with over_http(server.base_url, server.token) as mcp:
        missing = await mcp.call_tool("forget", {"id": NOBODY})
        stale = await mcp.call_tool("edit", {"id": fact["id"], "version": 5, "text": "I live in Porto"})
        malformed = await mcp.call_tool("remember", {})
    assert missing.is_error and missing.meta == {"mnemo/code": "not_found"}
    assert stale.is_error and stale.meta == {"mnemo/code": "version_conflict"}
    assert malformed.is_error and malformed.meta == {"mnemo/code": "invalid_request"}
