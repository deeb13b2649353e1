"""Conversations over HTTP and through the client: the list (words, assistant, dates, paging),
one conversation with its messages, turns and what they taught; another person's answer 404."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from mnemo.client import Client
from mnemo.write import extract_prompt
from tests.server.api import ok, submit, wait_for_job

pytestmark = pytest.mark.slow  # a real server


@pytest.fixture(autouse=True)
def _model(scripted_llm):
    """The extractor learns "I …" from a message "Remember that I …"; nothing from the rest."""

    def answer(body: dict) -> str | None:
        messages = body.get("messages") or []
        if not messages or messages[0]["content"] != extract_prompt.SYSTEM:
            return None
        said = re.search(r"^\[1\] User: Remember that (.*)$", messages[-1]["content"], re.MULTILINE)
        facts = [{"text": said.group(1), "message": 1}] if said else []
        return json.dumps({"facts": facts})

    scripted_llm.responder = answer


def _learnt(client, said: str, **fields) -> dict:
    answer = submit(client, said, **fields)
    return wait_for_job(client, answer["job"]["id"])


def test_the_list_and_a_conversation_with_what_it_taught(server, client, other):
    _learnt(client, "Remember that I live in Lisbon", conversation_id="trip/2026 ä")
    _learnt(client, "Remember that I like green tea", conversation_id="trip/2026 ä")
    _learnt(client, "What is the weather?", conversation_id="c2")
    _learnt(other, "Remember that I live in Oslo", conversation_id="c3")
    page = ok(client.get("/v1/conversations"))
    assert [c["id"] for c in page["items"]] == ["c2", "trip/2026 ä"]
    trip = page["items"][1]
    assert (trip["messages"], trip["opening"], trip["agent_id"]) == (
        4,
        "Remember that I live in Lisbon",
        None,
    )
    assert [c["id"] for c in ok(client.get("/v1/conversations", params={"q": "green TEA"}))["items"]] == [
        "trip/2026 ä"
    ]
    assert ok(client.get("/v1/conversations", params={"q": "Oslo"}))["items"] == []  # the other's
    assert ok(client.get("/v1/conversations", params={"limit": 1}))["next_offset"] == 1
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert ok(client.get("/v1/conversations", params={"since": later}))["items"] == []
    assert len(ok(client.get("/v1/conversations", params={"until": later}))["items"]) == 2
    assert len(ok(client.get("/v1/conversations", params={"agent_id": "default"}))["items"]) == 2

    one = ok(client.get(f"/v1/conversations/{quote('trip/2026 ä', safe='')}"))
    assert one["conversation"]["id"] == "trip/2026 ä"
    assert [m["content"] for m in one["messages"]][::2] == [
        "Remember that I live in Lisbon",
        "Remember that I like green tea",
    ]
    assert len(one["turns"]) == 2 and {t["state"] for t in one["turns"]} == {"learnt"}
    assert sorted(f["text"] for f in one["memories"]) == ["I like green tea", "I live in Lisbon"]
    # another person's conversation, and one that is not there, answer alike
    assert client.get("/v1/conversations/c3").status_code == 404
    assert other.get("/v1/conversations/c2").status_code == 404
    # the client
    with Client(server.base_url, key=server.token) as mnemo:
        assert [c.id for c in mnemo.conversations(q="Lisbon").items] == ["trip/2026 ä"]
        assert mnemo.conversation("trip/2026 ä").conversation.messages == 4
        _learnt(client, "I am here", conversation_id="..")
        assert mnemo.conversation("..").conversation.id == ".."


def test_bad_filters_are_refused_and_change_nothing(client):
    for params in (
        {"agent_id": "chef"},
        {"since": "yesterday"},
        {"limit": 0},
        {"limit": 201},
        {"q": ""},
    ):
        reply = client.get("/v1/conversations", params=params)
        assert reply.status_code == 422, params
    assert client.get("/v1/conversations", params={"q": "?!"}).status_code == 422  # no words
