"""docs/connect.md's front-end and MCP recipes, parsed from the markdown and run as they say:
the front-ends' settings drive the official `openai` client against a live mnemo, the MCP
clients' settings launch `mnemo mcp` (or reach /mcp) through the official `mcp` client."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from pathlib import Path

import httpx2
import openai
import pytest
import yaml
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.fakes.learner import Learner
from tests.mcp.conftest import SCRIPT, TOOLS, call
from tests.recipes.snippets import DOCS, KEY, dotenv, recipe, snippets
from tests.recipes.test_model_recipes import REPLY, SAID, answers
from tests.server.api import ok
from tests.server.test_turn_states import settled

pytestmark = pytest.mark.slow  # a live server, `mnemo mcp` processes

DOCUMENTED_MNEMO = "http://mnemo:8420"  # the front-ends' address of mnemo's container
DOCUMENTED_SCRIPT = "/home/you/mnemo/.venv/bin/mnemo"
DOCUMENTED_DATA = "/home/you/.local/share/mnemo"
DOCUMENTED_LOCAL = "http://127.0.0.1:8420"


@pytest.fixture
def learning(scripted_llm) -> Learner:
    learner = Learner()
    scripted_llm.responder = answers(learner)
    return learner


def memories(server) -> list[str]:
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {server.token}"}) as c:
        return [m["text"] for m in ok(c.get("/v1/memories"))["items"]]


def turn_of(server, turn_id: str) -> dict:
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {server.token}"}) as c:
        return settled(c, turn_id)


# -- chat front-ends ---------------------------------------------------------------------------


def test_open_webui_lists_the_model_and_streams_learnt_turns(server, scripted_llm, learning):
    language, text = recipe("open-webui")
    env = dotenv(text)
    assert language == "dotenv" and env["OPENAI_API_KEY"] == KEY
    # the background requests that would be learnt from are off
    assert all(env[f"ENABLE_{task}_GENERATION"] == "False" for task in ("TITLE", "TAGS", "FOLLOW_UP"))
    base_url = env["OPENAI_API_BASE_URL"].replace(DOCUMENTED_MNEMO, server.base_url)
    ai = openai.OpenAI(base_url=base_url, api_key=server.token, max_retries=0)

    assert [m.id for m in ai.models.list()] == ["scripted-model"]  # Open WebUI's model menu
    conversations = []
    for said in (SAID, "I started learning Portuguese."):
        with ai.chat.completions.with_streaming_response.create(
            model="scripted-model", messages=[{"role": "user", "content": said}], stream=True
        ) as streamed:
            text = "".join(c.choices[0].delta.content or "" for c in streamed.parse() if c.choices)
            assert text == REPLY
            conversations.append(streamed.headers["x-mnemo-conversation"])
            assert turn_of(server, streamed.headers["x-mnemo-turn"])["state"] == "learnt"
    assert sorted(memories(server)) == sorted([SAID, "I started learning Portuguese."])
    assert conversations[0] != conversations[1]  # no conversation id: each request its own


def test_librechat_endpoint_groups_a_conversation(server, scripted_llm, learning):
    language, text = recipe("librechat")
    assert language == "yaml"
    (endpoint,) = yaml.safe_load(text)["endpoints"]["custom"]
    assert endpoint["apiKey"] == "${MNEMO_API_KEY}" and endpoint["titleConvo"] is False
    assert endpoint["models"]["fetch"] is True
    conversation = str(uuid.uuid4())  # what LibreChat puts in place of its placeholder
    headers = {
        name: value.replace("{{LIBRECHAT_BODY_CONVERSATIONID}}", conversation)
        for name, value in endpoint["headers"].items()
    }
    ai = openai.OpenAI(
        base_url=endpoint["baseURL"].replace(DOCUMENTED_MNEMO, server.base_url),
        api_key=server.token,  # LibreChat's .env: MNEMO_API_KEY
        default_headers=headers,
        max_retries=0,
    )
    assert "scripted-model" in [m.id for m in ai.models.list()]
    (model,) = endpoint["models"]["default"]
    history = []
    for said in (SAID, "I started learning Portuguese."):
        history.append({"role": "user", "content": said})
        raw = ai.chat.completions.with_raw_response.create(model=model, messages=history)
        assert raw.parse().choices[0].message.content == REPLY
        assert raw.headers["x-mnemo-conversation"] == conversation
        assert turn_of(server, raw.headers["x-mnemo-turn"])["state"] == "learnt"
        history.append({"role": "assistant", "content": REPLY})
    forwarded = [b["model"] for b in scripted_llm.chat_requests() if "response_format" not in b]
    assert forwarded == [model, model]  # the chosen model passes through to the upstream
    # learning the second turn saw the first exchange: one conversation
    last_prompt = scripted_llm.chat_requests()[-1]["messages"][-1]["content"]
    assert SAID in last_prompt and "I started learning Portuguese." in last_prompt
    assert sorted(memories(server)) == sorted([SAID, "I started learning Portuguese."])


# -- MCP clients -------------------------------------------------------------------------------


def _local(value: str, tmp_path: Path) -> str:
    return value.replace(DOCUMENTED_SCRIPT, str(SCRIPT)).replace(DOCUMENTED_DATA, str(tmp_path))


async def _remember_and_recall(session: ClientSession, agent: str | None = None) -> None:
    await session.initialize()
    assert [t.name for t in (await session.list_tools()).tools] == TOOLS
    kept = await call(session, "remember", text="My sister Ana lives in Porto")
    assert kept["memory"]["agent"] == agent
    found = await call(session, "recall", query="where does my sister live?")
    assert [m["id"] for m in found["memories"]] == [kept["memory"]["id"]]


async def _over_stdio(command: str, args: list[str], env: dict[str, str], tmp_path, database_url, agent=None):
    """Launch what the client config says, with the documented paths made local."""
    env = {name: _local(value, tmp_path) for name, value in env.items()}
    assert env["MNEMO_DATA_DIR"] == str(tmp_path)
    if database_url:
        env["MNEMO_DATABASE_URL"] = database_url
    params = StdioServerParameters(command=_local(command, tmp_path), args=args, env=env)
    with (tmp_path / "mcp-stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await _remember_and_recall(session, agent)


@pytest.mark.parametrize("name", ["claude-desktop", "cursor"])
async def test_a_desktop_config_launches_mnemo_mcp(name, tmp_path, database_url):
    language, text = recipe(name)
    assert language == "json"
    server = json.loads(text)["mcpServers"]["mnemo"]
    assert server["command"] == DOCUMENTED_SCRIPT and server["args"] == ["mcp"]
    await _over_stdio(server["command"], server["args"], server["env"], tmp_path, database_url)


async def test_claude_code_mcp_add_launches_mnemo_mcp(tmp_path, database_url):
    language, text = recipe("claude-code")
    words = shlex.split(text)
    assert language == "bash" and words[:4] == ["claude", "mcp", "add", "mnemo"]
    options, launched = words[4 : words.index("--")], words[words.index("--") + 1 :]
    env = dict(options[i + 1].split("=", 1) for i, word in enumerate(options) if word in ("-e", "--env"))
    await _over_stdio(launched[0], launched[1:], env, tmp_path, database_url)


async def test_claude_code_project_file_acts_as_its_agent(tmp_path, database_url):
    language, text = recipe("claude-code-project")
    server = json.loads(text)["mcpServers"]["mnemo"]
    assert language == "json" and server["type"] == "stdio"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update({name: _local(value, tmp_path) for name, value in server["env"].items()})
    if database_url:
        env["MNEMO_DATABASE_URL"] = database_url
    # the agent named in args, created beforehand as the docs say
    created = subprocess.run(
        [str(SCRIPT), "agents", "create", "coder"], env=env, capture_output=True, text=True, timeout=60
    )
    assert created.returncode == 0, created.stderr
    await _over_stdio(server["command"], server["args"], server["env"], tmp_path, database_url, agent="coder")


async def _over_http(url: str, headers: dict[str, str], server) -> None:
    url = url.replace(DOCUMENTED_LOCAL, server.base_url)
    headers = {name: value.replace(KEY, server.token) for name, value in headers.items()}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await _remember_and_recall(session)
    assert memories(server) == ["My sister Ana lives in Porto"]


async def test_claude_code_over_http(server):
    words = shlex.split(recipe("claude-code-http")[1])
    assert words[:5] == ["claude", "mcp", "add", "--transport", "http"]
    url = next(word for word in words if word.startswith("http://"))
    name, _, value = words[words.index("--header") + 1].partition(": ")
    await _over_http(url, {name: value}, server)


async def test_cursor_over_http(server):
    config = json.loads(recipe("cursor-http")[1])["mcpServers"]["mnemo"]
    await _over_http(config["url"], config["headers"], server)


async def test_the_http_recipes_url_refuses_a_request_without_the_key(server):
    url = json.loads(recipe("cursor-http")[1])["mcpServers"]["mnemo"]["url"]
    async with httpx2.AsyncClient() as http:
        refused = await http.post(url.replace(DOCUMENTED_LOCAL, server.base_url), json={})
    assert refused.status_code == 401


def test_every_recipe_of_the_page_is_run_here():
    """A recipe added to docs/connect.md without a test here fails this list."""
    assert [name for name, _, _ in snippets()] == [
        "ollama", "vllm", "llama.cpp", "two-models", "open-webui", "librechat",
        "claude-desktop", "claude-code", "claude-code-project", "cursor", "claude-code-http", "cursor-http",
    ]  # fmt: skip
    assert [name for name, _, _ in snippets(DOCS / "scaling.md")] == [
        "sqlite-to-postgres",
        "postgres-to-citus",  # tests/store/test_citus_store.py
    ]
