"""Who may call what: keys, the admin key, and one user's ids seen by another (404, no trace)."""

from __future__ import annotations

import httpx2
import pytest

from tests.helpers import extraction
from tests.server.api import add, client_for, new_user, ok, submit, wait_for_job
from tests.server.conftest import ADMIN_KEY

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

SOME_ID = "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"
USER_ROUTES = [
    ("GET", "/v1/memories"),
    ("POST", "/v1/memories"),
    ("GET", f"/v1/memories/{SOME_ID}"),
    ("PATCH", f"/v1/memories/{SOME_ID}"),
    ("DELETE", f"/v1/memories/{SOME_ID}"),
    ("POST", f"/v1/memories/{SOME_ID}/restore"),
    ("GET", f"/v1/memories/{SOME_ID}/history"),
    ("POST", "/v1/memories/search"),
    ("GET", "/v1/review"),
    ("POST", f"/v1/review/{SOME_ID}/approve"),
    ("POST", f"/v1/review/{SOME_ID}/reject"),
    ("GET", "/v1/audit"),
    ("GET", "/v1/audit/verify"),
    ("GET", "/v1/me"),
    ("PATCH", "/v1/me/settings"),
    ("GET", "/v1/me/keys"),
    ("POST", "/v1/me/keys"),
    ("DELETE", "/v1/me/keys/0123456789abcdef"),
    ("GET", "/v1/agents"),
    ("POST", "/v1/agents"),
    ("PATCH", f"/v1/agents/{SOME_ID}"),
    ("DELETE", f"/v1/agents/{SOME_ID}"),
    ("POST", "/v1/turns"),
    ("GET", "/v1/jobs"),
    ("GET", f"/v1/jobs/{SOME_ID}"),
]
ADMIN_ROUTES = [
    ("GET", "/v1/admin/settings"),
    ("PATCH", "/v1/admin/settings"),
    ("POST", "/v1/admin/users"),
    ("GET", "/v1/admin/users"),
    ("GET", f"/v1/admin/users/{SOME_ID}/keys"),
    ("POST", f"/v1/admin/users/{SOME_ID}/keys"),
    ("DELETE", f"/v1/admin/users/{SOME_ID}/keys/0123456789abcdef"),
]


def test_every_route_needs_a_valid_key(server):
    bad_headers = [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer not-a-key"},
        {"Authorization": f"Bearer {server.token[:-2]}xx"},  # right id, wrong secret
    ]
    with httpx2.Client(base_url=server.base_url) as anonymous:
        for method, path in USER_ROUTES + ADMIN_ROUTES:
            for headers in bad_headers:
                reply = anonymous.request(method, path, headers=headers, json={})
                assert reply.status_code == 401, (method, path, headers, reply.text)
                assert reply.json()["error"]["message"]
                assert reply.headers["www-authenticate"] == "Bearer"


def test_admin_routes_refuse_a_user_key_and_user_routes_the_admin_key(client, admin):
    for method, path in ADMIN_ROUTES:
        reply = client.request(method, path, json={"memory_mode": None, "name": "x"})
        assert reply.status_code == 403 and "admin key" in reply.json()["error"]["message"]
    for method, path in USER_ROUTES:
        assert admin.request(method, path, json={}).status_code == 403, (method, path)


def test_the_admin_creates_users_whose_key_works_once_shown(server, admin):
    created = ok(admin.post("/v1/admin/users", json={"name": "bob"}), 201)
    assert created["user"]["name"] == "bob" and created["key"]["token"].startswith("mnemo_")
    with client_for(server, created["key"]["token"]) as bob:
        assert ok(bob.get("/v1/me"))["user"] == created["user"]
        [key] = ok(bob.get("/v1/me/keys"))
        assert key["id"] == created["key"]["id"] and "token" not in key
    taken = admin.post("/v1/admin/users", json={"name": "bob"})
    assert taken.status_code == 409 and "bob" in taken.json()["error"]["message"]


def test_a_new_key_is_shown_once_and_a_revoked_key_stops_at_once(server, client, other):
    created = ok(client.post("/v1/me/keys", json={"name": "laptop"}), 201)
    assert created["name"] == "laptop" and created["token"].startswith(f"mnemo_{created['id']}_")
    listed = ok(client.get("/v1/me/keys"))
    assert [k["name"] for k in listed] == ["first start", "laptop"]
    assert created["token"] not in str(listed)
    # another user cannot see or revoke it
    assert other.delete(f"/v1/me/keys/{created['id']}").status_code == 404
    with client_for(server, created["token"]) as laptop:
        assert laptop.get("/v1/me").status_code == 200
        revoked = ok(laptop.delete(f"/v1/me/keys/{created['id']}"))
        assert revoked["revoked_at"] is not None
        assert laptop.get("/v1/me").status_code == 401
    assert client.get("/v1/me").status_code == 200  # the other key still works
    assert client.delete("/v1/me/keys/not-hex").status_code == 404


def _seed(client, scripted_llm) -> dict:
    """The first user's memory, candidate, agent, job and conversation, and their secret texts."""
    fact = add(client, "My locker code is 7391")
    agent = ok(client.post("/v1/agents", json={"name": "diary-7391"}), 201)
    ok(client.patch("/v1/me/settings", json={"review_policy": "review"}))
    scripted_llm.reply_json(extraction("My safe combination is 8264"))
    turn = submit(client, "My safe combination is 8264", conversation_id="private-chat")
    job = wait_for_job(client, turn["job"]["id"])
    assert job["status"] == "done"
    [candidate] = ok(client.get("/v1/review"))["items"]
    return {"fact": fact, "agent": agent, "job": job, "candidate": candidate}


def leaked(text: str) -> list[str]:
    """The first user's secrets found in a reply. Named with their words: a reply's ids and
    hashes are hex, where four digits alone turn up now and then."""
    return [s for s in ("code is 7391", "diary-7391", "combination is 8264") if s in text]


def test_another_users_ids_answer_404_everywhere_and_leave_no_trace(client, other, scripted_llm):
    seed = _seed(client, scripted_llm)
    fact, candidate, agent, job = (
        seed["fact"]["id"],
        seed["candidate"]["id"],
        seed["agent"]["id"],
        seed["job"]["id"],
    )
    not_found = [
        ("GET", f"/v1/memories/{fact}", None),
        ("PATCH", f"/v1/memories/{fact}", {"version": 1, "text": "hacked"}),
        ("DELETE", f"/v1/memories/{fact}", None),
        ("DELETE", f"/v1/memories/{fact}?purge=true", None),
        ("POST", f"/v1/memories/{fact}/restore", None),
        ("GET", f"/v1/memories/{fact}/history", None),
        ("GET", f"/v1/memories?agent_id={agent}", None),
        ("POST", "/v1/memories", {"text": "planted", "agent_id": agent}),
        ("POST", "/v1/memories/search", {"query": "locker code", "agent_id": agent}),
        ("POST", f"/v1/review/{candidate}/approve", None),
        ("POST", f"/v1/review/{candidate}/reject", None),
        ("GET", f"/v1/review?agent_id={agent}", None),
        ("GET", f"/v1/audit?fact_id={fact}", None),
        ("PATCH", f"/v1/agents/{agent}", {"name": "mine"}),
        ("DELETE", f"/v1/agents/{agent}", None),
        ("GET", f"/v1/jobs/{job}", None),
        ("POST", "/v1/turns", {"messages": [{"role": "user", "content": "hi"}], "agent_id": agent}),
    ]
    for method, path, body in not_found:
        reply = other.request(method, path, json=body)
        assert reply.status_code == 404, (method, path, reply.text)
        assert not leaked(reply.text)
    # a made-up id answers the same words as a real one
    stranger = other.get(f"/v1/memories/{SOME_ID}").json()["error"]["message"]
    assert other.get(f"/v1/memories/{fact}").json()["error"]["message"] == stranger.replace(SOME_ID, fact)

    for path in (
        "/v1/memories?status=all",
        "/v1/review",
        "/v1/audit",
        "/v1/jobs",
        "/v1/agents",
        "/v1/me/keys",
    ):
        reply = other.get(path)
        assert reply.status_code == 200 and not leaked(reply.text), path
    for query in ("locker code 7391", "safe combination"):
        found = other.post("/v1/memories/search", json={"query": query})
        assert found.json()["items"] == []
    assert other.get("/v1/memories", params={"q": "locker"}).json()["items"] == []
    assert ok(other.get("/v1/audit/verify"))["events"] == 0

    # and nothing of the first user's changed
    assert ok(client.get(f"/v1/memories/{fact}"))["version"] == 1
    assert ok(client.get("/v1/review"))["items"][0]["status"] == "candidate"
    assert ok(client.get("/v1/agents"))[0]["name"] == "diary-7391"


def test_the_second_users_own_fixture_key_is_a_different_user(client, other):
    assert ok(client.get("/v1/me"))["user"]["name"] == "local"
    assert ok(other.get("/v1/me"))["user"]["name"] == "mallory"


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_user_needs_a_sensible_name(admin, name):
    assert admin.post("/v1/admin/users", json={"name": name}).status_code == 422


def test_the_admin_key_is_compared_whole(server):
    with client_for(server, ADMIN_KEY + "x") as wrong:
        assert wrong.get("/v1/admin/settings").status_code == 401
    assert new_user(server, "carol").startswith("mnemo_")
