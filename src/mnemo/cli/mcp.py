"""`mnemo mcp`: the memory tools for a desktop assistant or an IDE, over stdin and stdout."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import logs
from ..build import Core
from .runtime import Options, run_core

app = typer.Typer()


@app.command("mcp")
def mcp_command(
    ctx: typer.Context,
    json: Annotated[
        bool,
        typer.Option(
            "--json", help="Log to standard error as JSON (one object a line; MNEMO_LOG_FORMAT=json)."
        ),
    ] = False,
) -> None:
    """Serve remember, recall, forget, edit, list_memories and memory_history to an MCP client
    over stdin and stdout, as --user (and --agent, if given). Configure the client to
    start this command; it stops when the client closes the connection."""
    from ..mcp.stdio import serve

    options = ctx.find_object(Options) or Options()

    async def work(core: Core) -> None:
        # stdout belongs to the protocol: anything worth saying goes to stderr
        logs.to_stderr("mnemo mcp", json=json or core.settings.log_format == "json")
        await serve(core.memory, core.accounts, core.settings.user, options.agent)

    run_core(ctx, work, needs_db=False)
