"""The `mnemo` command: global options, and the command groups put together.

Every command runs one coroutine over an open core (see `runtime.run`), which
also turns mnemo's errors into messages and exit codes: 1 when the request
failed (unknown id or user, conflict, no database yet), 2 when it cannot be applied as
given (empty text, bad option values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from . import (
    admin,
    backfill,
    conversations,
    doctor,
    edits,
    erasure,
    facts,
    keys,
    mcp,
    reindex,
    server,
    transfer,
    turns,
)
from .runtime import Options

app = typer.Typer(
    name="mnemo",
    help="Long-term memory for your AI assistants, kept on your machine.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals may hold API keys
    add_completion=False,
)


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"mnemo {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            metavar="PATH",
            help="Where the database lives (default: MNEMO_DATA_DIR, else your data directory).",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", metavar="PATH", help="A TOML settings file.")
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", metavar="NAME", help="Whose memory (default: MNEMO_USER, else 'local')."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="Act as this agent (see mnemo agents list)."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print mnemo's version and stop."),
    ] = False,
) -> None:
    """Long-term memory for your AI assistants, kept on your machine."""
    ctx.obj = Options(
        data_dir=data_dir.expanduser() if data_dir else None,
        config=config.expanduser() if config else None,
        user=user,
        agent=agent,
    )


app.add_typer(facts.app)
app.add_typer(transfer.app)
app.add_typer(edits.app)
app.add_typer(admin.agents, name="agents")
app.add_typer(admin.settings, name="settings")
app.add_typer(admin.audit, name="audit")
app.add_typer(erasure.erase, name="erase")
app.add_typer(erasure.receipts, name="receipts")
app.add_typer(turns.turns, name="turns")
app.add_typer(conversations.conversations, name="conversations")
app.add_typer(server.app)
app.add_typer(server.users, name="users")
app.add_typer(keys.keys, name="keys")
app.add_typer(mcp.app)
app.add_typer(backfill.app)
app.add_typer(reindex.app)
app.add_typer(doctor.app)
