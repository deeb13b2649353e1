"""OpenAIChatModel through the real openai client against the scripted server."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable

import pytest

from mnemo.providers.base import ChatModel, ModelError, ModelUnavailable
from mnemo.providers.chat import OpenAIChatModel
from tests.fakes.openai_server import ScriptedOpenAI

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}
MESSAGES = [
    {"role": "system", "content": "Extract facts."},
    {"role": "user", "content": "I live in Lisbon."},
]

MakeModel = Callable[..., OpenAIChatModel]


@pytest.fixture
async def make_model(scripted_llm: ScriptedOpenAI) -> AsyncIterator[MakeModel]:
    """Builds chat models on the scripted server and closes them after the test."""
    made: list[OpenAIChatModel] = []

    def make(**kwargs: object) -> OpenAIChatModel:
        model = OpenAIChatModel(
            **{"base_url": scripted_llm.base_url, "api_key": "sk-test", "model": "m1", **kwargs}
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


async def ask(model: OpenAIChatModel) -> str:
    return await model.complete_json(MESSAGES, schema=SCHEMA, schema_name="facts")


def format_types(server: ScriptedOpenAI) -> list[str | None]:
    return [(body.get("response_format") or {}).get("type") for body in server.chat_requests()]


async def test_sends_json_schema_request(scripted_llm: ScriptedOpenAI, make_model: MakeModel) -> None:
    scripted_llm.reply_json({"facts": ["lives in Lisbon"]})
    model = make_model()

    assert isinstance(model, ChatModel)
    assert json.loads(await ask(model)) == {"facts": ["lives in Lisbon"]}
    (request,) = scripted_llm.requests
    assert request["method"] == "POST"
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert request["json"]["model"] == "m1"
    assert request["json"]["messages"] == MESSAGES
    assert request["json"]["temperature"] == 0
    assert request["json"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "facts", "schema": SCHEMA, "strict": False},
    }


async def test_returns_content_verbatim_even_when_not_json(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.reply('Sure! {"facts": ["half')

    assert await ask(make_model()) == 'Sure! {"facts": ["half'


async def test_falls_back_to_json_object_and_remembers(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.reject_response_format({"json_schema"})
    scripted_llm.reply_json({"facts": []})
    scripted_llm.reply_json({"facts": ["second"]})
    model = make_model()

    assert json.loads(await ask(model)) == {"facts": []}
    assert json.loads(await ask(model)) == {"facts": ["second"]}
    assert format_types(scripted_llm) == ["json_schema", "json_object", "json_object"]


async def test_falls_back_to_no_response_format(scripted_llm: ScriptedOpenAI, make_model: MakeModel) -> None:
    scripted_llm.reject_response_format({"json_schema", "json_object"})
    scripted_llm.reply_json({"facts": []})
    scripted_llm.reply_json({"facts": []})
    model = make_model()

    await ask(model)
    await ask(model)
    assert format_types(scripted_llm) == ["json_schema", "json_object", None, None]
    assert "response_format" not in scripted_llm.chat_requests()[-1]


async def test_other_bad_request_is_a_model_error_without_fallback(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.fail(400, "maximum context length exceeded")

    with pytest.raises(ModelError, match="maximum context length") as caught:
        await ask(make_model())
    assert not isinstance(caught.value, ModelUnavailable)  # retrying would not help
    assert format_types(scripted_llm) == ["json_schema"]


async def test_a_bad_key_is_a_model_error(scripted_llm: ScriptedOpenAI, make_model: MakeModel) -> None:
    scripted_llm.fail(401, "invalid api key")

    with pytest.raises(ModelError, match="invalid api key") as caught:
        await ask(make_model())
    assert not isinstance(caught.value, ModelUnavailable)


@pytest.mark.slow
async def test_server_errors_are_retried_then_unavailable(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.fail(500, "boom", times=3)
    scripted_llm.reply("{}")  # never reached: 1 try + 2 retries all fail

    with pytest.raises(ModelUnavailable, match="m1"):
        await ask(make_model(max_retries=2))
    assert len(scripted_llm.chat_requests()) == 3


async def test_a_retried_server_error_can_still_succeed(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.fail(503)
    scripted_llm.reply("{}")

    assert await ask(make_model(max_retries=1)) == "{}"
    assert len(scripted_llm.chat_requests()) == 2


async def test_rate_limit_after_retries_is_unavailable(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.fail(429, "slow down", times=2)

    with pytest.raises(ModelUnavailable):
        await ask(make_model(max_retries=1))


async def test_stalled_reply_times_out_as_unavailable(
    scripted_llm: ScriptedOpenAI, make_model: MakeModel
) -> None:
    scripted_llm.stall(5.0)
    started = time.monotonic()

    with pytest.raises(ModelUnavailable):
        await ask(make_model(timeout=0.3, max_retries=0))
    assert time.monotonic() - started < 3.0


async def test_unreachable_server_is_unavailable() -> None:
    with ScriptedOpenAI() as server:
        base_url = server.base_url  # a port that is closed once the server stops
    model = OpenAIChatModel(base_url, None, "m1", timeout=2.0, max_retries=0)

    with pytest.raises(ModelUnavailable):
        await ask(model)
    await model.aclose()
