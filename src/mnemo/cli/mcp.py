"""`mnemo mcp`: the memory tools for a desktop assistant or an IDE, over stdin and stdout."""

from __future__ import annotations

import logging
import sys

import typer

from ..build import Core
from .runtime import Options, run_core

app = typer.Typer()


@app.command("mcp")
def mcp_command(ctx: typer.Context) -> None:
    """Serve remember, recall, forget, list_memories and memory_history to an MCP client
    over stdin and stdout, as --user (and --agent, if given). Configure the client to
    start this command; it stops when the client closes the connection."""
    from ..mcp.stdio import serve

    options = ctx.find_object(Options) or Options()
    # stdout belongs to the protocol: anything worth saying goes to stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="mnemo mcp: %(message)s")

    async def work(core: Core) -> None:
        await serve(core.memory, core.accounts, core.settings.user, options.agent)

    run_core(ctx, work, needs_db=False)
