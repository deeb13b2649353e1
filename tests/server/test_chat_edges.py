"""The chat proxy at its edges: text that is not Unicode, bodies nested too deep, conversation
ids (each user's own, UTF-8, at most 200 characters), and a turn that could not be stored,
which is never answered as if it were.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from tests.helpers import fill_the_disk
from tests.server.test_chat_support import proxied, view  # noqa: F401

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

MODEL = "scripted-model"


@pytest.fixture
def server_settings(server_settings):
    """No worker: these turns are about being stored, and the scripted model answers the proxy
    alone (a worker would ask it to extract from each turn)."""
    return server_settings.model_copy(update={"worker": False})


def chat(client: httpx2.Client, body: bytes | dict, **headers) -> httpx2.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(
        "/v1/chat/completions", content=content, headers={"Content-Type": "application/json", **headers}
    )


def said(text: str) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": text}]}


def test_a_lone_surrogate_is_400_and_other_users_are_unaffected(client, other, scripted_llm):
    """Before, the text reached the shared embedder and failed other users' requests with it."""
    bad = b'{"model": "scripted-model", "messages": [{"role": "user", "content": "hi \\ud800 there"}]}'
    reply = chat(client, bad)
    assert reply.status_code == 400 and "lone surrogate" in reply.json()["error"]["message"]
    assert proxied(scripted_llm) == []  # nothing was forwarded

    def attack(_):
        return chat(client, bad).status_code

    def add(n):
        return other.post("/v1/memories", json={"text": f"I own {n} red kayaks"}).status_code

    with ThreadPoolExecutor(8) as pool:
        attacks = pool.map(attack, range(20))
        adds = pool.map(add, range(20))
        assert set(attacks) == {400} and set(adds) == {201}
    assert other.post("/v1/memories/search", json={"query": "kayaks"}).status_code == 200


@pytest.mark.parametrize("depth", [70, 100_000])
def test_a_body_nested_too_deep_is_400_and_the_connection_goes_on(client, depth):
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi", "x": ' + b"[" * depth
    body += b"]" * depth + b"}]}"
    reply = chat(client, body)
    assert reply.status_code == 400 and "nests more than 64 levels" in reply.json()["error"]["message"]
    assert reply.headers.get("connection") != "close"
    assert client.get("/v1/memories").status_code == 200


def test_conversation_ids_are_each_users_own(client, other, scripted_llm, server):
    """An id one user took first neither blocks another user's turns nor says it exists."""
    taken = client.post(
        "/v1/turns",
        json={"messages": [{"role": "user", "content": "My PIN is 7391"}], "conversation_id": "shared"},
    )
    assert taken.status_code == 202
    again = other.post(
        "/v1/turns", json={"messages": [{"role": "user", "content": "hello"}], "conversation_id": "shared"}
    )
    assert again.status_code == 202  # not 404: nothing about the first user's id shows
    scripted_llm.reply("Hello!")
    reply = chat(other, said("I live in Oslo"), **{"X-Mnemo-Conversation": "shared"})
    assert reply.status_code == 200 and reply.headers["x-mnemo-stored"] == "true"
    assert reply.headers["x-mnemo-conversation"] == "shared"
    jobs = other.get("/v1/jobs").json()["items"]
    assert len(jobs) == 2 and {j["conversation_id"] for j in jobs} == {"shared"}
    mine = client.get("/v1/jobs").json()["items"]
    assert len(mine) == 1 and "Oslo" not in json.dumps(mine)


def test_the_conversation_header_is_utf8_and_at_most_200_characters(client, scripted_llm):
    scripted_llm.reply("Bonjour !")
    reply = chat(client, said("Salut"), **{"X-Mnemo-Conversation": "été à Zürich".encode()})
    assert reply.status_code == 200
    assert dict(reply.headers.raw)[b"x-mnemo-conversation"] == "été à Zürich".encode()
    [job] = client.get("/v1/jobs").json()["items"]
    assert job["conversation_id"] == "été à Zürich"
    for header, problem in (
        ("x" * 201, "at most 200 characters"),
        (b"caf\xe9", "not UTF-8"),
        ("a\tb", "control characters"),
    ):
        reply = chat(client, said("Salut"), **{"X-Mnemo-Conversation": header})
        assert reply.status_code == 400 and problem in reply.json()["error"]["message"], reply.text
    assert len(client.get("/v1/jobs").json()["items"]) == 1


def test_a_turn_not_stored_says_so(client, scripted_llm):
    assert client.patch("/v1/me/settings", json={"memory_enabled": False}).status_code == 200
    scripted_llm.reply("Sure.")
    reply = chat(client, said("I live in Oslo"))
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "Sure."
    assert reply.headers["x-mnemo-stored"] == "false"
    assert reply.headers["x-mnemo-stored-reason"] == "memory is off"


def test_a_full_disk_is_507_and_a_proxied_turn_is_not_answered_as_stored(client, server, scripted_llm):
    kept = client.post("/v1/memories", json={"text": "I like tea"})
    assert kept.status_code == 201
    reply = fill_the_disk(server, client)
    assert reply.status_code == 507 and "disk is full" in reply.json()["error"]["message"], reply.text
    stored = len(client.get("/v1/memories?limit=200").json()["items"])
    long = "I keep a diary of " + "very long days " * 6000
    reply = client.post("/v1/turns", json={"messages": [{"role": "user", "content": long}]})
    assert reply.status_code == 507 and "disk is full" in reply.json()["error"]["message"], reply.text
    scripted_llm.reply("Noted.")
    reply = chat(client, said(long))
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "Noted."
    assert reply.headers["x-mnemo-stored"] == "false"
    assert reply.headers["x-mnemo-stored-reason"] == "storage is full"
    # reads go on, and what was answered as stored is there
    items = client.get("/v1/memories?limit=200").json()["items"]
    assert len(items) == stored and items[-1]["text"] == "I like tea"
    assert client.get("/v1/jobs").json()["items"] == []


def test_a_reply_with_a_lone_surrogate_is_stored_with_a_replacement(client, scripted_llm, view):  # noqa: F811
    """An upstream's reply may hold a lone surrogate; the client gets it as sent, and the turn
    is stored with U+FFFD in its place rather than lost."""
    scripted_llm.reply("Odd \ud800 reply")
    reply = chat(client, said("Hi there"))
    assert reply.status_code == 200 and reply.headers["x-mnemo-stored"] == "true"
    assert reply.json()["choices"][0]["message"]["content"] == "Odd \ud800 reply"
    [job] = view.jobs()
    assert [m.content for m in view.messages(job)] == ["Hi there", "Odd \ufffd reply"]


def test_a_streamed_turn_says_in_advance_when_it_will_not_be_stored(client, scripted_llm):
    for headers, reason in (({"X-Mnemo-Automation": "true"}, "automation"), ({}, None)):
        scripted_llm.reply("Streaming along")
        body = {**said("Hello"), "stream": True}
        with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as reply:
            assert reply.status_code == 200
            assert "data: [DONE]" in "".join(reply.iter_text())
            if reason:
                assert reply.headers["x-mnemo-stored"] == "false"
                assert reply.headers["x-mnemo-stored-reason"] == reason
            else:  # to be stored once the stream ends: no header can say so before
                assert "x-mnemo-stored" not in reply.headers


def test_an_upstream_error_holding_a_lone_surrogate_is_relayed_not_a_500(client, scripted_llm):
    for stream in (False, True):
        scripted_llm.fail(400, "cannot read \ud800 here")
        reply = chat(client, {**said("Hello"), "stream": stream})
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"].endswith("cannot read \ufffd here")
        assert client.get("/v1/memories").status_code == 200
