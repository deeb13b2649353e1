"""Don't remember this conversation: the person's switch, set over the API, the CLI's core and
the chat proxy's X-Mnemo-Remember header; its later turns are answered with recall but neither
stored nor learnt from; on again, they are."""

from __future__ import annotations

import httpx2
import openai
import pytest

from tests.helpers import extraction
from tests.server.api import ok
from tests.server.test_chat import say
from tests.server.test_chat_support import ai, proxied, view  # noqa: F401

pytestmark = pytest.mark.slow  # a real server


def test_the_api_sets_the_switch_before_or_after_the_first_turn(client, other):
    off = ok(client.patch("/v1/conversations/quiet", json={"remember": False}))
    assert (off["id"], off["remember"], off["messages"]) == ("quiet", False, 0)
    turn = {"conversation_id": "quiet", "messages": [{"role": "user", "content": "Remember that I like tea"}]}
    answer = ok(client.post("/v1/turns", json=turn))
    assert (answer["queued"], answer["reason"]) == (
        False,
        "you asked that this conversation not be remembered",
    )
    assert ok(client.get("/v1/conversations/quiet"))["messages"] == []
    assert ok(client.get("/v1/jobs"))["items"] == []
    # another person's conversation of the same id is theirs: stored
    assert other.post("/v1/turns", json=turn).status_code == 202
    on = ok(client.patch("/v1/conversations/quiet", json={"remember": True}))
    assert on["remember"] is True
    assert client.post("/v1/turns", json=turn).status_code == 202
    assert len(ok(client.get("/v1/conversations/quiet"))["messages"]) == 1
    # what the API refuses
    assert client.patch("/v1/conversations/quiet", json={"remember": "no"}).status_code == 422
    assert client.patch("/v1/conversations/quiet", json={}).status_code == 422


def test_the_proxy_reads_the_header_answers_with_recall_and_stores_nothing(ai, view, scripted_llm, client):  # noqa: F811
    view.add_fact("My favourite colour is green")
    scripted_llm.reply("Green, then.")
    raw, completion = say(
        ai,
        "Which colour for the report? My PIN is 4412",
        extra_headers={"X-Mnemo-Conversation": "private-1", "X-Mnemo-Remember": "off"},
    )
    assert completion.choices[0].message.content == "Green, then."
    assert (
        raw.headers["x-mnemo-recalled"] == "1"
        and "green" in proxied(scripted_llm)[0]["messages"][0]["content"]
    )
    assert (raw.headers["x-mnemo-stored"], raw.headers["x-mnemo-stored-reason"]) == (
        "false",
        "the conversation is not remembered",
    )
    assert view.jobs() == []
    kept = ok(client.get("/v1/conversations/private-1"))
    assert kept["conversation"]["remember"] is False and kept["messages"] == []
    # the switch stays: a later turn without the header is not stored either, streamed or not
    scripted_llm.reply("Still green.")
    raw, _ = say(ai, "And the cover?", extra_headers={"X-Mnemo-Conversation": "private-1"})
    assert raw.headers["x-mnemo-stored"] == "false" and view.jobs() == []
    scripted_llm.reply("Green again.")
    with ai.chat.completions.with_streaming_response.create(
        model="scripted-model",
        messages=[{"role": "user", "content": "And the back?"}],
        stream=True,
        extra_headers={"X-Mnemo-Conversation": "private-1"},
    ) as streamed:
        assert streamed.headers["x-mnemo-stored"] == "false" and "x-mnemo-turn" not in streamed.headers
        assert "data: [DONE]" in "".join(streamed.iter_text())  # the reply came, streamed
    assert view.jobs() == []
    # on again
    scripted_llm.reply("Noted.")
    scripted_llm.reply_json(extraction())
    raw, _ = say(ai, "Thanks", extra_headers={"X-Mnemo-Conversation": "private-1", "X-Mnemo-Remember": "on"})
    assert raw.headers["x-mnemo-stored"] == "true"
    view.settled_jobs(1)
    # a value that is neither on nor off is refused before the model is asked
    asked = len(scripted_llm.chat_requests())
    with pytest.raises(openai.BadRequestError, match="x-mnemo-remember: say on or off"):
        say(ai, "Hi", extra_headers={"X-Mnemo-Remember": "maybe"})
    assert len(scripted_llm.chat_requests()) == asked


def test_the_page_switches_it_and_try_it_offers_it(server, client, scripted_llm):
    ok(
        client.post(
            "/v1/turns", json={"conversation_id": "c1", "messages": [{"role": "user", "content": "Hi"}]}
        ),
        202,
    )
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as page:
        assert page.post("/signin", data={"key": server.token}).status_code == 200
        shown = page.get("/conversation", params={"id": "c1"}).text
        csrf = shown.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        assert "Don&#39;t remember this conversation" in shown or "Don't remember this conversation" in shown
        off = page.post("/conversation/remember", data={"csrf": csrf, "id": "c1", "remember": "off"})
        assert 'id="not-remembered"' in off.text
        assert ok(client.get("/v1/conversations/c1"))["conversation"]["remember"] is False
        on = page.post("/conversation/remember", data={"csrf": csrf, "id": "c1", "remember": "on"})
        assert 'id="not-remembered"' not in on.text
        assert (
            page.post(
                "/conversation/remember", data={"csrf": csrf, "id": "nope", "remember": "off"}
            ).status_code
            == 404
        )
        assert 'name="forget"' in page.get("/try").text
        # Try it shows a conversation switched off as such, and does not turn it back on
        ok(client.patch("/v1/conversations/c1", json={"remember": False}))
        scripted_llm.default_reply = "Noted."  # the upstream answers whatever it is sent
        form = {"csrf": csrf, "conversation": "c1", "message": "My PIN is 4412", "history": "[]"}
        said = page.post("/try", data=form)
        assert (
            said.status_code == 200
            and 'id="chat-forget" name="forget" type="checkbox" value="on" checked' in said.text
        )
        assert ok(client.get("/v1/conversations/c1"))["conversation"]["remember"] is False
        assert all("4412" not in m["content"] for m in ok(client.get("/v1/conversations/c1"))["messages"])
