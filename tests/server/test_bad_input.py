"""Bad requests get a clear 4xx answer, never a 500: size, JSON, fields, ids, text, parameters."""

from __future__ import annotations

import pytest

from tests.server.api import add, ok

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

SOME_ID = "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"


def error(reply, status: int) -> str:
    assert reply.status_code == status, (reply.status_code, reply.text)
    message = reply.json()["error"]["message"]
    assert message and "Traceback" not in message
    return message


def test_a_body_over_the_limit_is_413_whether_or_not_it_says_its_length(client, server):
    limit = server.settings.max_body_bytes
    big = {"text": "x" * (limit + 10)}
    assert "bytes" in error(client.post("/v1/memories", json=big), 413)

    def chunks():  # no Content-Length: the server counts as it reads
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536

    assert "bytes" in error(client.post("/v1/memories", content=chunks()), 413)
    assert client.get("/v1/me").status_code == 200  # the server is fine afterwards


def test_invalid_json_is_422_and_says_so(client):
    headers = {"Content-Type": "application/json"}
    message = error(client.post("/v1/memories", content=b'{"text": "I live', headers=headers), 422)
    assert message.startswith("body: not valid JSON")
    assert "JSON object" in error(client.post("/v1/memories", content=b"[1, 2]", headers=headers), 422)
    assert "JSON object" in error(client.post("/v1/memories", content=b'"text"', headers=headers), 422)
    form = client.post("/v1/memories", content=b"text=hello", headers={"Content-Type": "text/plain"})
    assert "application/json" in error(form, 422)
    assert "required" in error(client.post("/v1/memories"), 422)


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/memories", {"text": "I live in Lisbon", "colour": "red"}, "body.colour"),
        ("POST", "/v1/memories/search", {"query": "x", "top_k": 3}, "body.top_k"),
        ("POST", "/v1/agents", {"name": "coach", "model": "gpt"}, "body.model"),
        ("PATCH", "/v1/me/settings", {"memory": True}, "body.memory"),
        (
            "POST",
            "/v1/turns",
            {"messages": [{"role": "user", "content": "hi", "name": "x"}]},
            "body.messages.0.name",
        ),
        ("POST", "/v1/me/keys", {"name": "laptop", "scopes": []}, "body.scopes"),
    ],
)
def test_unknown_fields_are_refused_by_name(client, method, path, body, field):
    assert error(client.request(method, path, json=body), 422) == f"{field}: unknown field"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"text": ""}, "some text besides spaces"),
        ({"text": "   \n "}, "some text besides spaces"),
        ({"text": "x" * 2001}, "at most 2000 characters"),
        ({"text": 42}, "valid string"),
        ({"text": "I live in Lisbon", "category": "gossip"}, "body.category"),
        ({"text": "I live in Lisbon", "valid_from": "last spring"}, "body.valid_from"),
        ({"text": "I live in Lisbon", "agent_id": "coach"}, "a UUID"),
        ({}, "body.text: Field required"),
    ],
)
def test_bad_memory_bodies_are_422(client, body, words):
    assert words in error(client.post("/v1/memories", json=body), 422)


def test_bad_edits_are_422(client):
    fact = add(client, "I live in Lisbon")
    path = f"/v1/memories/{fact['id']}"
    assert "version" in error(client.patch(path, json={"text": "I live in Porto"}), 422)
    assert "version" in error(client.patch(path, json={"version": "two", "text": "x"}), 422)
    assert "version" in error(client.patch(path, json={"version": 0, "text": "x"}), 422)
    assert "at least one of" in error(client.patch(path, json={"version": 1}), 422)
    assert "some text besides spaces" in error(client.patch(path, json={"version": 1, "text": " "}), 422)
    assert ok(client.get(path))["version"] == 1


@pytest.mark.parametrize(
    "path",
    [
        "/v1/memories/not-an-id",
        "/v1/memories/123",
        f"/v1/memories/{SOME_ID}x",
        "/v1/memories/' OR 1=1 --",
        f"/v1/memories/{'a' * 5000}",
        "/v1/memories/not-an-id/history",
        "/v1/jobs/42",
        f"/v1/jobs/{SOME_ID}",
        f"/v1/memories/{SOME_ID}",
    ],
)
def test_an_id_that_names_nothing_is_404(client, path):
    message = error(client.get(path), 404)
    assert message.startswith("no ") and len(message) < 200


def test_ids_that_name_nothing_in_writes_are_404(client):
    for method, path, body in [
        ("PATCH", "/v1/memories/nope", {"version": 1, "text": "x"}),
        ("DELETE", "/v1/memories/nope", None),
        ("POST", "/v1/memories/nope/restore", None),
        ("POST", "/v1/review/nope/approve", None),
        ("POST", "/v1/review/nope/reject", None),
        ("PATCH", "/v1/agents/nope", {"name": "x"}),
        ("DELETE", f"/v1/agents/{SOME_ID}", None),
        ("DELETE", "/v1/me/keys/nope", None),
    ]:
        error(client.request(method, path, json=body), 404)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "query.limit"),
        ({"limit": 1000}, "query.limit"),
        ({"limit": "ten"}, "query.limit"),
        ({"offset": -1}, "query.offset"),
        ({"offset": 10**30}, "query.offset"),
        ({"status": "forgotten"}, "query.status"),
        ({"as_of": "yesterday"}, "query.as_of"),
        ({"as_of": "0001-01-01T00:00:00+14:00"}, "query.as_of"),  # the year 0 once in UTC
        ({"as_of": "13"}, "query.as_of"),  # a number is no date, nor a Unix time
        ({"agent_id": "coach"}, "query.agent_id"),
        ({"q": ""}, "query.q"),
    ],
)
def test_bad_list_parameters_are_422_and_name_the_parameter(client, params, field):
    assert error(client.get("/v1/memories", params=params), 422).startswith(field)


def test_far_pages_are_empty_not_errors(client):
    add(client, "I live in Lisbon")
    for params in ({"offset": 10**9}, {"q": "Lisbon", "offset": 10**9}):
        page = ok(client.get("/v1/memories", params=params))
        assert page["items"] == [] and page["next_offset"] is None
    assert ok(client.get("/v1/audit", params={"offset": 10**9}))["items"] == []
    assert ok(client.get("/v1/jobs", params={"offset": 10**9}))["items"] == []


def test_other_bad_bodies_are_422(client):
    cases = [
        ("POST", "/v1/memories/search", {"query": ""}),
        ("POST", "/v1/memories/search", {"query": "x", "limit": 0}),
        ("POST", "/v1/memories/search", {"query": "x", "as_of": "soon"}),
        ("POST", "/v1/memories/search", {"query": "x", "as_of": "0001-01-01T00:00:00+14:00"}),
        ("POST", "/v1/memories", {"text": "x", "valid_from": "9999-12-31T23:00:00-05:00"}),  # the year 10000
        ("POST", "/v1/turns", {"messages": []}),
        ("POST", "/v1/turns", {"messages": [{"role": "wizard", "content": "hi"}]}),
        ("POST", "/v1/turns", {"messages": [{"role": "user"}]}),
        ("POST", "/v1/turns", {"messages": [{"role": "user", "content": "hi"}], "conversation_id": ""}),
        ("POST", "/v1/agents", {"name": "  "}),
        ("POST", "/v1/agents", {"name": "coach", "persona": "x" * 5000}),
        ("PATCH", f"/v1/agents/{SOME_ID}", {}),
        ("PATCH", f"/v1/agents/{SOME_ID}", {"name": None}),
        ("POST", "/v1/me/keys", {"name": ""}),
        ("GET", "/v1/audit?fact_id=nope", None),
        ("GET", "/v1/jobs?status=sleeping", None),
    ]
    for method, path, body in cases:
        error(client.request(method, path, json=body), 422)


def test_a_clash_of_agent_names_is_refused_clearly(client):
    ok(client.post("/v1/agents", json={"name": "coach"}), 201)
    # the name is taken: a conflict with what is there, as a stale version is
    assert "coach" in error(client.post("/v1/agents", json={"name": "coach"}), 409)


@pytest.mark.parametrize(
    "body",
    [
        {"text": "I keep bees", "pinned": "true"},
        {"text": "I keep bees", "pinned": 1},
        {"text": "I keep bees", "valid_from": 1767225600},
    ],
)
def test_a_value_of_the_wrong_json_type_is_refused_not_converted(client, body):
    field = next(k for k in body if k != "text")
    assert field in error(client.post("/v1/memories", json=body), 422)
    fact = ok(client.post("/v1/memories", json={"text": "I keep bees"}), 201)
    edit = {"text": "I keep wasps", "version": True}  # true is not version 1
    assert "version" in error(client.patch(f"/v1/memories/{fact['id']}", json=edit), 422)
    assert ok(client.get(f"/v1/memories/{fact['id']}"))["text"] == "I keep bees"


def test_an_unknown_route_answers_in_the_same_shape(client):
    assert error(client.get("/v1/nothing-here"), 404)
    assert error(client.put("/v1/memories"), 405)


def test_api_dates_are_checked_in_utc_and_read_back(client):
    """The year 1000 at +14:00 is the year 999 in UTC: taken, and read back as such. The API
    takes 0001-01-02 to 9999-12-30 with any offset (its schema's pattern can say no more)."""
    made = ok(
        client.post(
            "/v1/memories",
            json={"text": "I was born at the date line", "valid_from": "1000-01-01T00:00:00+14:00"},
        ),
        201,
    )
    assert made["valid_from"] == "0999-12-31T10:00:00Z"
    first = ok(
        client.post("/v1/memories", json={"text": "I am old", "valid_from": "0001-01-02T00:00:00+14:00"}), 201
    )
    assert first["valid_from"] == "0001-01-01T10:00:00Z"
    assert {m["text"] for m in ok(client.get("/v1/memories"))["items"]} == {
        "I was born at the date line",
        "I am old",
    }
    assert ok(client.get("/v1/memories", params={"as_of": "0874-06-01"}))["items"] == []
    assert ok(client.get("/v1/memories", params={"as_of": "9999-12-30T23:00:00-05:00"}))["items"]
    for edge in ("0001-01-01T23:00:00+01:00", "9999-12-31T00:00:00Z"):
        assert "0001-01-02 to 9999-12-30" in error(client.get("/v1/memories", params={"as_of": edge}), 422)
