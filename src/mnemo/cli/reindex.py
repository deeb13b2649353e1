"""`mnemo reindex`: give every fact a vector of the configured embedding model."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..batch.reindex import BATCH_SIZE, Report
from ..build import Core
from . import output
from .interrupt import two_step_interrupt
from .options import Json
from .runtime import chosen_users, run_core

app = typer.Typer()

INTERRUPTED = 130  # as a shell reports a command ended by Ctrl-C


@app.command()
def reindex(
    ctx: typer.Context,
    users: Annotated[
        str | None,
        typer.Option(
            "--users",
            metavar="NAMES",
            help="Comma-separated user names (default: the global --user if given, else everyone"
            " with facts).",
        ),
    ] = None,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size", min=1, metavar="N", help=f"Facts embedded at a time (default {BATCH_SIZE})."
        ),
    ] = BATCH_SIZE,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Then drop every other model's vectors (once the servers run on this model).",
        ),
    ] = False,
    json: Json = False,
) -> None:
    """Give every fact a vector of the configured embedding model, beside its others.

    To change the embedding model: configure the new one (MNEMO_EMBED_*) where
    this command runs and run it, while the servers keep recalling through the
    old model's vectors; restart the servers on the new model (every fact has
    its vector by then, so they all switch at once); run it again, to embed what
    was written in between, with --prune to drop the old model's vectors.

    Facts are embedded --batch-size at a time, each batch written in one
    transaction. Nothing else records progress: after Ctrl-C (which finishes the
    batch in hand, exit 130), a failing model or a crash, running again carries
    on with the facts still without a vector; with none left it does nothing.
    """
    names = chosen_users(ctx, users)  # `mnemo --user NAME reindex`: that person's facts

    async def work(core: Core) -> Report:
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        task: TaskID  # added once the users are known; the progress callback reads it
        with two_step_interrupt("batch") as interrupt:
            job = core.reindex(
                batch_size=batch_size,
                progress=lambda user, n: progress.update(task, advance=n, description=f"embedding {user}"),
                stop_requested=lambda: interrupt.requested,
            )
            chosen = await job.users(names)
            task = progress.add_task(f"embedding ({core.memory.embedder.model_name})", total=None)
            try:
                with progress:
                    return await job.run(chosen, prune=prune)
            except asyncio.CancelledError:
                job.report.stopped = "abandoned"
                interrupt.forgive()
                return job.report

    report = run_core(ctx, work)
    if json:
        output.emit_json(report.to_json())
    else:
        _show(report)
    if report.stopped is not None:
        raise typer.Exit(INTERRUPTED)


def _show(report: Report) -> None:
    table = Table(title=f"Reindex ({report.model})")
    table.add_column("user", no_wrap=True)
    for name in ("embedded", "changed meanwhile", "pruned", "vectors per model"):
        table.add_column(name, justify="right")
    for u in report.users:
        models = ", ".join(f"{m}: {n}" for m, n in u.models.items()) or "none"
        table.add_row(Text(u.user), str(u.embedded), str(u.changed), str(u.pruned), Text(models))
    output.show(table)
    if report.stopped is not None:
        output.error(f"Stopped ({report.stopped}). Run `mnemo reindex` again to carry on.")
    elif any(u.changed for u in report.users):
        output.say("Some facts changed while being embedded: run `mnemo reindex` again for them.", "yellow")
    else:
        output.say("Done: every fact has a vector of " + report.model + ".", "green")
