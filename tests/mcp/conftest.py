"""Fixtures and helpers for the MCP tests: the official client over stdio and over HTTP.

The HTTP tests use the server fixtures of tests/server (a real server on
loopback, once per backend); the stdio tests run the installed `mnemo` script.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.server.conftest import admin, client, other, server, server_settings  # noqa: F401

SCRIPT = Path(sys.executable).parent / "mnemo"
TOOLS = ["remember", "recall", "forget", "edit", "list_memories", "memory_history"]


@asynccontextmanager
async def over_http(base_url: str, token: str | None, **headers: str) -> AsyncIterator[ClientSession]:
    """An initialised session with the server's /mcp, presenting `token` as the bearer key."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def over_stdio(
    data_dir: Path, *options: str, database_url: str | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised session with `mnemo [options] mcp` run as a process. Anything on its
    stdout that is not the protocol fails the test when the session ends."""
    env = {"MNEMO_DATABASE_URL": database_url} if database_url else {}
    params = StdioServerParameters(
        command=str(SCRIPT), args=["--data-dir", str(data_dir), *options, "mcp"], env=env
    )
    garbled: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            garbled.append(message)

    with (data_dir / "mcp-stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            await session.initialize()
            yield session
    assert not garbled, f"stdout carried more than the protocol: {garbled}"


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful call's structured result (which the client checked against the output schema)."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A call that must fail as a tool error; its message."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text
