"""Getting back in through the admin API: the users, a user's keys, a new key, a revoked one."""

from __future__ import annotations

import pytest

from tests.server.api import client_for, ok

pytestmark = pytest.mark.slow  # each test runs a real server


def test_the_admin_lists_users_and_gives_one_who_lost_their_key_a_new_one(server, admin):
    alice = ok(admin.post("/v1/admin/users", json={"name": "Alïce ✓"}), 201)
    bob = ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)
    alice_id, lost = alice["user"]["id"], alice["key"]

    users = ok(admin.get("/v1/admin/users"))
    assert [(u["name"], u["live_keys"], u["memory_enabled"]) for u in users] == [
        ("Alïce ✓", 1, True),
        ("bob", 1, True),
        ("local", 1, True),  # made on the first start
    ]
    assert all(
        u["created_at"]
        and set(u)
        == {
            "id",
            "name",
            "created_at",
            "live_keys",
            "memory_enabled",
            "disabled_at",
            "queued_turns",
            "failed_turns",
        }
        for u in users
    )

    made = ok(admin.post(f"/v1/admin/users/{alice_id}/keys", json={"name": "new phone"}), 201)
    assert made["name"] == "new phone" and made["token"].startswith(f"mnemo_{made['id']}_")
    with client_for(server, made["token"]) as again:
        assert ok(again.get("/v1/me"))["user"]["name"] == "Alïce ✓"

    keys = ok(admin.get(f"/v1/admin/users/{alice_id}/keys"))
    assert [(k["id"], k["revoked_at"]) for k in keys] == [(lost["id"], None), (made["id"], None)]
    assert all("token" not in k for k in keys)
    assert lost["token"].split("_", 2)[2] not in admin.get(f"/v1/admin/users/{alice_id}/keys").text

    revoked = ok(admin.delete(f"/v1/admin/users/{alice_id}/keys/{lost['id']}"))
    assert revoked["id"] == lost["id"] and revoked["revoked_at"]
    with client_for(server, lost["token"]) as thief:
        assert thief.get("/v1/me").status_code == 401
    with client_for(server, made["token"]) as again:
        assert again.get("/v1/me").status_code == 200
    with client_for(server, bob["key"]["token"]) as untouched:
        assert untouched.get("/v1/me").status_code == 200
    live = {u["name"]: u["live_keys"] for u in ok(admin.get("/v1/admin/users"))}
    assert live == {"Alïce ✓": 1, "bob": 1, "local": 1}


def test_another_users_key_and_unknown_users_are_404_and_change_nothing(server, admin):
    alice = ok(admin.post("/v1/admin/users", json={"name": "alice"}), 201)
    bob = ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)
    alice_id, bob_key = alice["user"]["id"], bob["key"]

    crossed = admin.delete(f"/v1/admin/users/{alice_id}/keys/{bob_key['id']}")
    assert crossed.status_code == 404 and bob_key["id"] in crossed.json()["error"]["message"]
    with client_for(server, bob_key["token"]) as still:
        assert still.get("/v1/me").status_code == 200

    nobody = "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"
    before = ok(admin.get("/v1/admin/users"))
    for user_id in (nobody, "not-a-uuid", "%F0%9F%99%82", "x" * 5000):
        assert admin.get(f"/v1/admin/users/{user_id}/keys").status_code == 404, user_id
        assert admin.post(f"/v1/admin/users/{user_id}/keys", json={}).status_code == 404, user_id
        gone = admin.delete(f"/v1/admin/users/{user_id}/keys/{bob_key['id']}")
        assert gone.status_code == 404, user_id
    assert ok(admin.get("/v1/admin/users")) == before
    assert admin.delete(f"/v1/admin/users/{alice_id}/keys/not-a-key").status_code == 404
    for bad in ({"name": ""}, {"name": "x" * 10_000}, {"label": "x"}):
        assert admin.post(f"/v1/admin/users/{alice_id}/keys", json=bad).status_code == 422, bad
    assert [k["id"] for k in ok(admin.get(f"/v1/admin/users/{alice_id}/keys"))] == [alice["key"]["id"]]


def test_a_users_key_cannot_reach_the_admin_routes(server, client, admin):
    bob = ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)
    me = ok(client.get("/v1/me"))["user"]["id"]
    for method, path in (
        ("GET", "/v1/admin/users"),
        ("GET", f"/v1/admin/users/{me}/keys"),
        ("POST", f"/v1/admin/users/{me}/keys"),
        ("DELETE", f"/v1/admin/users/{bob['user']['id']}/keys/{bob['key']['id']}"),
    ):
        assert client.request(method, path, json={}).status_code == 403, (method, path)
    with client_for(server, bob["key"]["token"]) as still:
        assert still.get("/v1/me").status_code == 200
