"""docs/connect.md's model recipes: `mnemo serve` started with exactly the documented environment,
the model servers' addresses pointed at scripted servers that behave as Ollama, vLLM and llama.cpp
do, and a turn through the proxy relayed and learnt."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx2
import openai
import pytest

from mnemo.write import extract_prompt
from tests.fakes.learner import Learner
from tests.fakes.openai_server import ScriptedOpenAI
from tests.recipes.snippets import exports, recipe
from tests.server.api import ok
from tests.server.processes import Serve
from tests.server.test_turn_states import settled

pytestmark = pytest.mark.slow  # `mnemo serve` processes

REPLY = "Noted, enjoy Porto!"
SAID = "I moved to Porto last month."


def answers(learner: Learner):
    """A model server's answers: facts to an extraction request, REPLY to a chat."""

    def answer(body: dict) -> str | None:
        if body["messages"][0].get("content") == extract_prompt.SYSTEM:
            return learner(body)
        return REPLY

    return answer


@pytest.fixture
def model_servers() -> Iterator[dict[int, ScriptedOpenAI]]:
    """A scripted server in place of each port the recipes name (11434 Ollama, 8000 vLLM,
    8080 llama.cpp); each answers as `answers` does."""
    with ExitStack() as stack:
        servers = {port: stack.enter_context(ScriptedOpenAI()) for port in (11434, 8000, 8080)}
        for server in servers.values():
            server.responder = answers(Learner())
        yield servers


def start(name: str, servers: dict[int, ScriptedOpenAI], tmp_path, database_url, **extra: str) -> Serve:
    """`mnemo serve` as the recipe says, on a free port, with its model addresses on loopback."""
    language, text = recipe(name)
    env, commands = exports(text)
    assert language == "bash" and commands == [["mnemo", "serve"]]
    for setting, value in env.items():
        for port, server in servers.items():
            if value == f"http://localhost:{port}/v1":
                env[setting] = server.base_url
    assert not [v for v in env.values() if "localhost" in v], env
    base = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    base.update(env, MNEMO_DATA_DIR=str(tmp_path), **extra)
    if database_url:
        base["MNEMO_DATABASE_URL"] = database_url
    return Serve(base, tmp_path / "serve.log")


def chat(serve: Serve, text: str, model: str | None = None) -> Any:
    """One turn through the proxy with the official client, as a front-end sends it."""
    ai = openai.OpenAI(base_url=f"{serve.base_url}/v1", api_key=serve.token, max_retries=0)
    return ai.chat.completions.with_raw_response.create(
        model=model or "",
        messages=[{"role": "system", "content": "You are brief."}, {"role": "user", "content": text}],
        extra_headers={"X-Mnemo-Conversation": "recipe"},
    )


def learnt(serve: Serve, text: str) -> tuple[dict, list[str]]:
    """Say `text` through the proxy: the turn once settled, and the person's memories."""
    raw = chat(serve, text)
    assert raw.parse().choices[0].message.content == REPLY  # relayed as the model said it
    assert raw.headers["x-mnemo-stored"] == "true"
    with httpx2.Client(base_url=serve.base_url, headers={"Authorization": f"Bearer {serve.token}"}) as c:
        turn = settled(c, raw.headers["x-mnemo-turn"])
        return turn, [m["text"] for m in ok(c.get("/v1/memories"))["items"]]


def formats(server: ScriptedOpenAI) -> list[str | None]:
    """The response_format type of each learning request the server got, in order."""
    return [
        (body.get("response_format") or {}).get("type")
        for body in server.chat_requests()
        if body["messages"][0].get("content") == extract_prompt.SYSTEM
    ]


def served(server: ScriptedOpenAI) -> list[str]:
    """The model of each chat (not learning) request the server got."""
    return [
        body["model"]
        for body in server.chat_requests()
        if body["messages"][0].get("content") != extract_prompt.SYSTEM
    ]


@pytest.mark.parametrize(("name", "port"), [("ollama", 11434), ("vllm", 8000), ("llama.cpp", 8080)])
def test_a_model_recipe_relays_and_learns(name, port, model_servers, tmp_path, database_url, processes):
    model = model_servers[port]
    if name == "vllm":  # a chat template that requires user and assistant to alternate
        model.alternating_roles = True
    if name == "llama.cpp":  # a build that refuses the json_schema form
        model.reject_response_format({"json_schema"})
    serve = start(name, model_servers, tmp_path, database_url)
    processes.append(serve.process)

    turn, memories = learnt(serve, SAID)
    assert turn["state"] == "learnt" and memories == [SAID]
    assert formats(model) == (["json_schema", "json_object"] if name == "llama.cpp" else ["json_schema"])
    env, _ = exports(recipe(name)[1])
    assert served(model) == [env["MNEMO_LLM_MODEL"]]  # a request naming no model gets the recipe's

    # the next turn recalls it, in the system message: the roles still alternate
    again, _ = learnt(serve, "Where do I live now?")
    assert again["state"] == "learnt"
    forwarded = [b for b in model.chat_requests() if b["messages"][0]["content"] != extract_prompt.SYSTEM]
    assert [m["role"] for m in forwarded[-1]["messages"]] == ["system", "user"]
    assert SAID in forwarded[-1]["messages"][0]["content"]
    assert formats(model)[-1] == ("json_object" if name == "llama.cpp" else "json_schema")  # remembered
    for other in set(model_servers.values()) - {model}:
        assert other.requests == []


def test_the_memory_block_as_a_user_message_breaks_alternating_templates(
    model_servers, tmp_path, database_url, processes
):
    """What the vLLM recipe warns of: `before_user` puts two user messages in a row."""
    model_servers[8000].alternating_roles = True
    serve = start("vllm", model_servers, tmp_path, database_url, MNEMO_RECALL__PLACEMENT="before_user")
    processes.append(serve.process)
    assert learnt(serve, SAID)[0]["state"] == "learnt"  # nothing recalled yet: nothing inserted

    with pytest.raises(openai.BadRequestError) as refused:
        chat(serve, "Where do I live now?")
    assert "Conversation roles must alternate" in refused.value.message
    assert SAID in json.dumps(model_servers[8000].chat_requests()[-1]["messages"][1])


def test_two_models_chat_with_one_and_learn_with_the_other(model_servers, tmp_path, database_url, processes):
    serve = start("two-models", model_servers, tmp_path, database_url)
    processes.append(serve.process)
    turn, memories = learnt(serve, SAID)
    assert turn["state"] == "learnt" and memories == [SAID]
    assert served(model_servers[8000]) == ["Qwen/Qwen2.5-72B-Instruct"] and formats(model_servers[8000]) == []
    assert served(model_servers[11434]) == [] and formats(model_servers[11434]) == ["json_schema"]


@pytest.mark.parametrize("prose", [False, True], ids=["json-in-prose-mode", "prose"])
def test_a_model_without_structured_output(prose, model_servers, tmp_path, database_url, processes):
    """A server that refuses every response_format: mnemo asks with none. A reply that holds JSON
    is learnt; one that holds none fails the turn as invalid_reply, and the chat is unaffected."""
    model = model_servers[8080]
    model.reject_response_format({"json_schema", "json_object"})
    if prose:
        model.responder = lambda body: (
            "Sure! You moved to Porto." if body["messages"][0]["content"] == extract_prompt.SYSTEM else REPLY
        )
    serve = start("llama.cpp", model_servers, tmp_path, database_url)
    processes.append(serve.process)

    turn, memories = learnt(serve, SAID)
    assert formats(model) == ["json_schema", "json_object", None]
    if prose:
        assert (turn["state"], turn["reason"], memories) == ("failed", "invalid_reply", [])
    else:
        assert (turn["state"], memories) == ("learnt", [SAID])
