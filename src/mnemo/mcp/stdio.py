"""The tools over stdin and stdout (`mnemo mcp`), for the configured user.

A desktop assistant or an IDE starts this as a subprocess; stdout carries the
protocol and nothing else.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from ..accounts import Accounts
from ..domain import NotFound, find_agent
from ..memory import Memory
from .server import build_server
from .tools import Caller


async def serve(memory: Memory, accounts: Accounts, user_name: str, agent_name: str | None = None) -> None:
    """Serve until the client closes stdin. The user is created on first use, as by the CLI;
    `agent_name` (an agent's id or name) is who the tools act as by default."""
    user = await accounts.user(user_name)
    agent = None
    if agent_name is not None:
        agent = find_agent(await accounts.agents(user.id), agent_name)
        if agent is None:
            hint = f"create it with: mnemo --user {user.name} agents create {agent_name}"
            raise NotFound(f"no agent {agent_name!r} for user {user.name!r}; {hint}")
    caller = Caller(memory, accounts, user, agent)

    async def resolve(_: ServerRequestContext[Any, Any]) -> Caller:
        return caller

    server = build_server(resolve)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
