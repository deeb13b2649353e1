"""`mnemo doctor`: check the settings, the data directory, the database and the models."""

from __future__ import annotations

import asyncio

import typer
from rich.text import Text

from .. import doctor
from . import output
from .options import Json
from .runtime import FAILED, Options

app = typer.Typer()

_STYLE = {doctor.OK: "green", doctor.WARN: "yellow", doctor.FAIL: "red"}


@app.command("doctor")
def doctor_command(ctx: typer.Context, json: Json = False) -> None:
    """Check the settings (naming any MNEMO_* variable or TOML key that is no setting), the data
    directory's permissions and free disk, the database, the embedder and the chat model; each
    check says ok, warn or fail, with what to fix. Exits 1 when a check fails."""
    options = ctx.find_object(Options) or Options()
    overrides = {"data_dir": options.data_dir, "user": options.user}
    findings = asyncio.run(doctor.examine(options.config, **overrides))
    if json:
        output.emit_json({"ok": not doctor.failed(findings), "checks": [f.json() for f in findings]})
    else:
        for f in findings:
            line = Text(f"{f.status:<5}", style=_STYLE[f.status])
            line.append(f" {f.check:<11} {f.message}")
            output.say(line)
            if f.fix and f.status != doctor.OK:
                output.say(f"{'':17} fix: {f.fix}")
    if doctor.failed(findings):
        raise typer.Exit(FAILED)
