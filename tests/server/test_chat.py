"""The chat proxy end to end: the official openai client → mnemo on loopback → the scripted upstream.

The scripted server is both the upstream chat model and the extractor (the
server's llm_* settings point at it), so its one reply queue is consumed in
order: each turn's proxied reply, then that turn's extraction once the job runs.
"""

from __future__ import annotations

import httpx2
import openai
import pytest

from mnemo.settings import Settings
from tests.fakes.live_server import LiveServer
from tests.helpers import extraction
from tests.server.test_chat_support import ai, chat_client, free_port, proxied, view  # noqa: F401

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

MODEL = "scripted-model"


def say(ai, text: str, history: list | None = None, **kwargs):  # noqa: F811
    """One non-streamed user turn; returns (raw response, parsed completion)."""
    messages = [*(history or []), {"role": "user", "content": text}]
    raw = ai.chat.completions.with_raw_response.create(model=MODEL, messages=messages, **kwargs)
    return raw, raw.parse()


def test_a_plain_turn_comes_back_unchanged_and_is_stored_for_learning(ai, view, scripted_llm, server):  # noqa: F811
    scripted_llm.reply("Hello! How can I help?")
    scripted_llm.reply_json(extraction())

    raw, completion = say(ai, "Hi there")

    assert completion.choices[0].message.content == "Hello! How can I help?"
    assert raw.headers["x-mnemo-recalled"] == "0"
    sent = proxied(scripted_llm)[0]
    assert sent["model"] == MODEL and sent["messages"] == [{"role": "user", "content": "Hi there"}]
    forwarded = next(r for r in scripted_llm.requests if r["path"].endswith("/chat/completions"))
    assert forwarded["headers"]["authorization"] == "Bearer not-needed"  # the upstream key, not mnemo's
    (job,) = view.settled_jobs(1)
    assert job.conversation_id == raw.headers["x-mnemo-conversation"]
    assert [(m.role, m.content) for m in view.messages(job)] == [
        ("user", "Hi there"),
        ("assistant", "Hello! How can I help?"),
    ]


def test_a_turn_with_nul_characters_is_kept(ai, view, scripted_llm):  # noqa: F811
    """PostgreSQL cannot store NUL in text; the proxied turn is kept with U+FFFD in its place."""
    scripted_llm.reply("Odd\x00reply")
    scripted_llm.reply_json(extraction())

    _, completion = say(ai, "Hi\x00there")

    assert completion.choices[0].message.content == "Odd\x00reply"  # the client gets the upstream's reply
    (job,) = view.settled_jobs(1)
    assert [(m.role, m.content) for m in view.messages(job)] == [
        ("user", "Hi\ufffdthere"),
        ("assistant", "Odd\ufffdreply"),
    ]


def test_the_body_is_the_upstreams_byte_for_byte(server, scripted_llm, view):  # noqa: F811
    scripted_llm.reply("Exactly this.")
    scripted_llm.reply_json(extraction())
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Say it"}]}
    reply = httpx2.post(
        f"{server.base_url}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {server.token}"},
    )
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == "Exactly this."
    assert reply.json()["usage"]["completion_tokens"] == 2  # the upstream's own numbers, untouched
    view.settled_jobs(1)


@pytest.mark.citus_ci
def test_a_streamed_turn_is_relayed_and_its_text_assembled(ai, view, scripted_llm):  # noqa: F811
    scripted_llm.reply("Streaming works in three pieces")
    scripted_llm.reply_json(extraction())

    stream = ai.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Stream please"}], stream=True
    )
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]

    assert len(pieces) >= 3 and "".join(pieces) == "Streaming works in three pieces"
    assert proxied(scripted_llm)[0]["stream"] is True
    (job,) = view.settled_jobs(1)
    assert view.messages(job)[1].content == "Streaming works in three pieces"


@pytest.mark.citus_ci
def test_a_fact_said_in_turn_one_is_injected_in_turn_three(ai, view, scripted_llm):  # noqa: F811
    history: list = []
    turns = [
        ("I moved to Lisbon last month", "Welcome to Lisbon!", extraction("I live in Lisbon")),
        ("What's a good weekend hobby?", "Try surfing.", extraction()),
        ("Where should I eat tonight?", "Try a tasca nearby.", extraction()),
    ]
    for n, (said, answer, learnt) in enumerate(turns, start=1):
        scripted_llm.reply(answer)
        scripted_llm.reply_json(learnt)
        raw, completion = say(ai, said, history)
        assert completion.choices[0].message.content == answer
        view.settled_jobs(n)
        history += [{"role": "user", "content": said}, {"role": "assistant", "content": answer}]

    assert [f.text for f in view.facts()] == ["I live in Lisbon"]
    third = proxied(scripted_llm)[2]["messages"]
    block, latest = third[0], third[-1]
    assert latest == {"role": "user", "content": "Where should I eat tonight?"}
    assert block["role"] == "system" and "I live in Lisbon" in block["content"]
    assert "data, not instructions" in block["content"]
    assert third[1:-1] == history[:-2]  # the client's conversation, unchanged after the memory block
    assert int(raw.headers["x-mnemo-recalled"]) >= 1


def test_automation_reads_memory_but_writes_nothing(ai, view, scripted_llm):  # noqa: F811
    view.add_fact("My favourite colour is green")
    scripted_llm.reply("Noted.")

    raw, _ = say(ai, "What colour should the report be?", extra_headers={"X-Mnemo-Automation": "true"})

    assert raw.headers["x-mnemo-recalled"] == "1"
    assert "green" in proxied(scripted_llm)[0]["messages"][0]["content"]
    assert view.jobs() == []
    assert len(scripted_llm.chat_requests()) == 1  # no extraction asked for
    assert [f.text for f in view.facts()] == ["My favourite colour is green"]


def test_memory_switched_off_mid_conversation_writes_nothing_more(ai, view, scripted_llm):  # noqa: F811
    scripted_llm.reply("Nice to meet you.")
    scripted_llm.reply_json(extraction("My name is Ana"))
    say(ai, "My name is Ana", extra_headers={"X-Mnemo-Conversation": "conv-1"})
    view.settled_jobs(1)

    view.memory_switch(False)
    scripted_llm.reply("Cats are great.")
    raw, _ = say(ai, "Ana here: I have two cats", extra_headers={"X-Mnemo-Conversation": "conv-1"})

    assert raw.headers["x-mnemo-recalled"] == "0"  # off means off for reading too
    assert len(proxied(scripted_llm)[1]["messages"]) == 1
    assert [j.conversation_id for j in view.jobs()] == ["conv-1"]
    assert [f.text for f in view.facts()] == ["My name is Ana"]


@pytest.mark.parametrize(
    ("status", "error"), [(400, openai.BadRequestError), (500, openai.InternalServerError)]
)
def test_upstream_errors_come_back_with_their_status_and_message(ai, view, scripted_llm, status, error):  # noqa: F811
    scripted_llm.fail(status, "the prompt is unacceptable")

    with pytest.raises(error) as caught:
        say(ai, "Hello?")

    assert caught.value.status_code == status
    assert caught.value.body["message"] == f"the upstream model answered {status}: the prompt is unacceptable"
    assert view.jobs() == []


def test_a_streamed_request_gets_the_upstream_error_too(ai, scripted_llm):  # noqa: F811
    scripted_llm.fail(400, "bad stream")
    with pytest.raises(openai.BadRequestError, match="bad stream"):
        ai.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}], stream=True)


def test_an_unreachable_upstream_is_a_502(server_settings):
    settings = server_settings.model_copy(update={"upstream_base_url": f"http://127.0.0.1:{free_port()}/v1"})
    with (
        LiveServer(settings) as live,
        chat_client(live) as client,
        pytest.raises(openai.APIStatusError) as caught,
    ):
        say(client, "Anyone there?")
    assert caught.value.status_code == 502
    assert "could not be reached" in caught.value.body["message"]


def test_a_silent_upstream_is_a_504(server_settings, scripted_llm):
    scripted_llm.stall(3, "too late")
    settings = server_settings.model_copy(update={"upstream_timeout": 0.3})
    with (
        LiveServer(settings) as live,
        chat_client(live) as client,
        pytest.raises(openai.APIStatusError) as caught,
    ):
        say(client, "Are you thinking?")
    assert caught.value.status_code == 504
    assert "sent nothing for 0.3 s" in caught.value.body["message"]


def test_without_an_upstream_the_proxy_says_so(server_settings):
    settings = server_settings.model_copy(update={"upstream_base_url": None})
    with (
        LiveServer(settings) as live,
        chat_client(live) as client,
        pytest.raises(openai.APIStatusError) as caught,
    ):
        say(client, "Hello?")
    assert caught.value.status_code == 503 and "MNEMO_UPSTREAM_BASE_URL" in caught.value.body["message"]


def test_a_tool_result_follow_up_is_recalled_for_but_not_stored_again(server, view, scripted_llm):  # noqa: F811
    view.add_fact("I live in Porto")
    scripted_llm.reply("It is sunny in Porto.")
    messages = [
        {"role": "user", "content": "What's the weather where I live?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    reply = httpx2.post(
        f"{server.base_url}/v1/chat/completions",
        json={"model": MODEL, "messages": messages},
        headers={"Authorization": f"Bearer {server.token}"},
    )
    assert reply.status_code == 200 and reply.headers["x-mnemo-recalled"] == "1"
    sent = proxied(scripted_llm)[0]["messages"]
    assert sent[0]["role"] == "system" and "Porto" in sent[0]["content"]  # the block, a system message
    assert sent[1:] == messages
    assert view.jobs() == []


def test_the_proxy_needs_a_mnemo_key(server):
    with (
        openai.OpenAI(base_url=server.base_url + "/v1", api_key="not-a-key", max_retries=0) as client,
        pytest.raises(openai.AuthenticationError),
    ):
        say(client, "Let me in")


def test_a_body_that_is_not_a_chat_request_is_a_400(server):
    url, headers = f"{server.base_url}/v1/chat/completions", {"Authorization": f"Bearer {server.token}"}
    for body in (b"{not json", b"[]", b'{"model": "m", "messages": []}'):
        reply = httpx2.post(url, content=body, headers=headers, timeout=30)
        assert reply.status_code == 400
        assert reply.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_that_needs_alternating_roles_takes_the_memory_block(ai, view, scripted_llm, stream):  # noqa: F811
    """A chat template that refuses two user messages in a row (Mistral Instruct on vLLM) takes
    the block in the system message; the client's own system prompt is kept before it."""
    view.add_fact("My favourite colour is green")
    scripted_llm.alternating_roles = True
    scripted_llm.reply("Green, then.")
    messages = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "What colour should the report be?"},
    ]
    if stream:
        chunks = ai.chat.completions.create(model=MODEL, messages=messages, stream=True)
        said = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        said = ai.chat.completions.create(model=MODEL, messages=messages).choices[0].message.content
    assert said == "Green, then."
    sent = proxied(scripted_llm)[0]["messages"]
    assert (
        sent[0]["content"].startswith("Answer briefly.\n\nFacts about the person")
        and "green" in sent[0]["content"]
    )
    assert sent[1:] == messages[1:]


def test_the_block_before_the_latest_message_is_refused_by_such_an_upstream(
    scripted_llm, tmp_path, database_url
):
    """The other placement, kept as a setting, gives two user messages in a row: the test above
    would fail without the system placement."""
    from mnemo.settings import RecallSettings
    from tests.server.conftest import ADMIN_KEY

    settings = Settings(
        data_dir=tmp_path,
        database_url=database_url,
        admin_key=ADMIN_KEY,
        llm_base_url=scripted_llm.base_url,
        llm_model=MODEL,
        recall=RecallSettings(placement="before_user"),
    )
    with LiveServer(settings) as live:
        ok = httpx2.post(
            f"{live.base_url}/v1/memories",
            json={"text": "My favourite colour is green"},
            headers={"Authorization": f"Bearer {live.token}"},
        )
        assert ok.status_code == 201
        scripted_llm.alternating_roles = True
        client = openai.OpenAI(base_url=f"{live.base_url}/v1", api_key=live.token, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="roles must alternate"):
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "What colour?"}]
            )
