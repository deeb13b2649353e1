"""`mnemo mcp`: the installed script as a subprocess, through the official client's stdio transport."""

from __future__ import annotations

import os
import subprocess

import pytest

from mnemo.build import build_store
from mnemo.domain import Scope, Status
from mnemo.memory import Memory
from mnemo.settings import Settings
from tests.mcp.conftest import SCRIPT, TOOLS, call, over_stdio, refused

pytestmark = pytest.mark.slow  # `mnemo mcp` processes


async def stored(data_dir, database_url, embedder, work):
    """`work(memory)` over the database the process used."""
    memory = Memory(build_store(Settings(data_dir=data_dir, database_url=database_url)), embedder)
    await memory.open()
    try:
        return await work(memory)
    finally:
        await memory.store.close()


@pytest.mark.citus_ci
async def test_the_tools_over_stdio_for_the_configured_user(tmp_path, database_url, embedder):
    async with over_stdio(tmp_path, "--user", "alice", database_url=database_url) as mcp:
        listed = {t.name: t for t in (await mcp.list_tools()).tools}
        assert list(listed) == TOOLS
        for tool in listed.values():
            assert len(tool.description) > 150 and tool.input_schema["type"] == "object"
            assert tool.output_schema["type"] == "object" and "$defs" not in tool.input_schema
        remember = listed["remember"].input_schema
        assert remember["required"] == ["text"] and remember["additionalProperties"] is False
        assert remember["properties"]["text"]["maxLength"] == 2000
        assert "preference" in remember["properties"]["category"]["enum"]
        assert listed["recall"].input_schema["properties"]["limit"]["anyOf"][0]["maximum"] == 50
        assert listed["recall"].annotations.read_only_hint is True
        assert listed["forget"].annotations.destructive_hint is False

        kept = await call(mcp, "remember", text="My sister Ana lives in Porto", category="relationship")
        fact_id = kept["memory"]["id"]
        found = await call(mcp, "recall", query="where does my sister live?", limit=3)
        assert [m["id"] for m in found["memories"]] == [fact_id]
        assert set(found["memories"][0]["reasons"]) >= {"semantic", "lexical"}
        assert (await call(mcp, "list_memories", limit=1))["memories"][0]["category"] == "relationship"

        await call(mcp, "forget", id=fact_id, reason="she moved")
        assert [e["action"] for e in (await call(mcp, "memory_history", id=fact_id))["events"]] == [
            "create",
            "retract",
        ]
        assert await refused(mcp, "forget", id=fact_id) == "Cannot retract a memory that is retracted."
        assert "limit: Input should be greater than or equal to 1" in await refused(
            mcp, "list_memories", limit=0
        )

    async def alices(memory: Memory):
        alice = await memory.accounts.find_user("alice")
        return await memory.list(Scope(alice.id), statuses=None), await memory.accounts.find_user("local")

    facts, local = await stored(tmp_path, database_url, embedder, alices)
    assert [(f.text, f.status) for f in facts] == [("My sister Ana lives in Porto", Status.RETRACTED)]
    assert local is None  # only the configured user was created


async def test_agent_option_makes_the_tools_act_as_that_agent(tmp_path, embedder):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    args = [str(SCRIPT), "--data-dir", str(tmp_path), "--agent", "coder", "mcp"]
    missing = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert missing.returncode == 1 and missing.stdout == ""
    assert "No agent 'coder' for user 'local'" in missing.stderr and "Traceback" not in missing.stderr

    async def make_coder(memory: Memory):
        return await memory.accounts.create_agent(
            (await memory.accounts.user("local")).id, "coder", private=True
        )

    coder = await stored(tmp_path, None, embedder, make_coder)
    async with over_stdio(tmp_path, "--agent", "coder") as mcp:
        kept = await call(mcp, "remember", text="I write Python with type hints")
        assert kept["memory"]["agent"] == "coder"
        assert len((await call(mcp, "recall", query="which language do I write?"))["memories"]) == 1

    async def facts(memory: Memory):
        return await memory.list(Scope(coder.user_id, all_agents=True))

    assert [(f.text, f.agent_id) for f in await stored(tmp_path, None, embedder, facts)] == [
        ("I write Python with type hints", coder.id)
    ]
