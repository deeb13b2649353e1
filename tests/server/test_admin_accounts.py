"""The administrator steers accounts over the API: rename, disable and enable a person, see when
each key last worked and each person's turns in the queue; every action logged without names."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import httpx2
import pytest

from tests.server.api import client_for, ok, submit, wait_for_job

pytestmark = pytest.mark.slow  # each test runs a real server

NOBODY = "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"


def _person(admin: httpx2.Client, name: str) -> tuple[str, str]:
    made = ok(admin.post("/v1/admin/users", json={"name": name}), 201)
    return made["user"]["id"], made["key"]["token"]


def test_a_rename_keeps_the_keys_and_a_taken_or_empty_name_changes_nothing(server, admin, caplog):
    caplog.set_level(logging.INFO, logger="mnemo.admin")
    alice, token = _person(admin, "alice")
    bob, _ = _person(admin, "bob")

    renamed = ok(admin.patch(f"/v1/admin/users/{alice}", json={"name": "Alïce Ødegård ✓"}))
    assert renamed["id"] == alice and renamed["name"] == "Alïce Ødegård ✓"
    with client_for(server, token) as her:
        assert ok(her.get("/v1/me"))["user"]["name"] == "Alïce Ødegård ✓"

    taken = admin.patch(f"/v1/admin/users/{alice}", json={"name": "bob"})
    assert taken.status_code == 409 and "bob" in taken.json()["error"]["message"]
    for bad in ({"name": ""}, {"name": "   "}, {"name": "x" * 10_000}, {"name": "a\x00b"}, {"nom": "x"}):
        assert admin.patch(f"/v1/admin/users/{alice}", json=bad).status_code in (409, 422), bad
    for nobody in (NOBODY, "not-a-uuid", "x" * 5000):
        assert admin.patch(f"/v1/admin/users/{nobody}", json={"name": "carol"}).status_code == 404
    names = {u["id"]: u["name"] for u in ok(admin.get("/v1/admin/users"))}
    assert names[alice] == "Alïce Ødegård ✓" and names[bob] == "bob" and "carol" not in names.values()
    # its own name again is no conflict
    assert ok(admin.patch(f"/v1/admin/users/{alice}", json={"name": "Alïce Ødegård ✓"}))["name"]

    assert f"admin: renamed user {alice}" in caplog.text
    assert "Ødegård" not in caplog.text


def test_a_disabled_account_is_refused_everywhere_keeps_its_memories_and_comes_back(
    server, admin, client, caplog
):
    caplog.set_level(logging.INFO, logger="mnemo.admin")
    alice, token = _person(admin, "alice")
    with client_for(server, token) as her:
        ok(her.post("/v1/memories", json={"text": "I keep bees on the roof"}), 201)

    off = ok(admin.patch(f"/v1/admin/users/{alice}", json={"disabled": True}))
    assert off["disabled_at"] is not None
    again = ok(admin.patch(f"/v1/admin/users/{alice}", json={"disabled": True}))
    assert again["disabled_at"] == off["disabled_at"]  # disabling twice keeps the first time

    with client_for(server, token) as her:
        for method, path in (("GET", "/v1/me"), ("GET", "/v1/memories"), ("POST", "/v1/chat/completions")):
            refused = her.request(method, path, json={} if method == "POST" else None)
            assert refused.status_code == 403, (path, refused.text)
            assert "disabled" in refused.json()["error"]["message"]
        mcp = her.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert mcp.status_code == 403
    signin = httpx2.post(f"{server.base_url}/signin", data={"key": token}, follow_redirects=False)
    assert signin.status_code == 403 and "disabled" in signin.text
    assert ok(client.get("/v1/me"))["user"]["name"] == "local"  # nobody else is touched

    member = ok(admin.get(f"/v1/admin/users/{alice}"))
    assert member["disabled_at"] == off["disabled_at"] and member["live_keys"] == 1
    on = ok(admin.patch(f"/v1/admin/users/{alice}", json={"disabled": False}))
    assert on["disabled_at"] is None
    with client_for(server, token) as her:
        assert [m["text"] for m in ok(her.get("/v1/memories"))["items"]] == ["I keep bees on the roof"]

    for bad in ({"disabled": "yes"}, {"disabled": 1}, {"disabled": None, "x": 1}):
        assert admin.patch(f"/v1/admin/users/{alice}", json=bad).status_code == 422, bad
    assert f"admin: disabled user {alice}" in caplog.text and f"admin: enabled user {alice}" in caplog.text


def test_a_disabled_persons_key_is_no_failed_guess(server_settings):
    """A right key of a disabled account says so, and is not counted towards the limit on
    wrong keys: enabled again, it works at once."""
    from mnemo.settings import AuthLimitSettings
    from tests.fakes.live_server import LiveServer
    from tests.server.conftest import ADMIN_KEY

    limited = server_settings.model_copy(update={"auth_limit": AuthLimitSettings(failures=2, window=60)})
    with LiveServer(limited) as live, client_for(live, ADMIN_KEY) as admin:
        alice, token = _person(admin, "alice")
        ok(admin.patch(f"/v1/admin/users/{alice}", json={"disabled": True}))
        with client_for(live, token) as her:
            assert [her.get("/v1/me").status_code for _ in range(4)] == [403] * 4
            ok(admin.patch(f"/v1/admin/users/{alice}", json={"disabled": False}))
            assert her.get("/v1/me").status_code == 200


def test_each_key_says_when_it_last_worked_to_the_hour(server, admin):
    alice, token = _person(admin, "alice")
    [key] = ok(admin.get(f"/v1/admin/users/{alice}/keys"))
    assert key["last_used_at"] is None
    with client_for(server, token) as her:
        ok(her.get("/v1/me"))
        ok(her.get("/v1/memories"))
    [key] = ok(admin.get(f"/v1/admin/users/{alice}/keys"))
    used = datetime.fromisoformat(key["last_used_at"])
    now = datetime.now(UTC)
    assert used.minute == used.second == used.microsecond == 0
    assert 0 <= (now - used).total_seconds() < 3600 + 60
    with client_for(server, f"{token[:-4]}xxxx") as wrong:
        assert wrong.get("/v1/me").status_code == 401
    assert ok(admin.get(f"/v1/admin/users/{alice}/keys"))[0]["last_used_at"] == key["last_used_at"]


def test_each_person_shows_their_turns_queued_and_failed(server, admin, client, scripted_llm):
    alice, token = _person(admin, "alice")
    scripted_llm.fail(400, "no")
    with client_for(server, token) as her:
        job = submit(her, "I moved to Porto")["job"]["id"]
        assert wait_for_job(her, job)["status"] == "failed"
    people = {u["name"]: u for u in ok(admin.get("/v1/admin/users"))}
    assert (people["alice"]["queued_turns"], people["alice"]["failed_turns"]) == (0, 1)
    assert (people["local"]["queued_turns"], people["local"]["failed_turns"]) == (0, 0)
    assert ok(admin.get(f"/v1/admin/users/{alice}"))["failed_turns"] == 1


def test_a_persons_key_cannot_rename_or_disable(server, client, admin):
    alice, _ = _person(admin, "alice")
    for body in ({"name": "mallory"}, {"disabled": True}):
        assert client.patch(f"/v1/admin/users/{alice}", json=body).status_code == 403
        assert client.get(f"/v1/admin/users/{alice}").status_code == 403
    assert ok(admin.get(f"/v1/admin/users/{alice}"))["name"] == "alice"
    assert ok(admin.get(f"/v1/admin/users/{alice}"))["disabled_at"] is None
