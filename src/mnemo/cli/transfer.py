"""Moving memory in and out: `mnemo export` and `mnemo import` (formats: docs/export-format.md)."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..batch import export
from ..batch.transfer import CONVERSATION_FORMATS, FACT_FORMATS, Format, ImportReport, import_file
from ..build import Core, is_postgres_url, sqlite_path
from ..domain import Conflict
from ..settings import Settings
from ..store.sqlite_backup import SameFile, back_up
from ..wording import plural
from . import output
from .backfill import learn_command
from .interrupt import stopped_as_by_ctrl_c
from .options import Json
from .runtime import (
    BAD_INPUT,
    CliFailure,
    Options,
    Session,
    guarded,
    is_database_error,
    no_user,
    run,
    run_core,
    usage,
)

app = typer.Typer()


@contextmanager
def progress() -> Iterator[Progress]:
    """A progress display on stderr, shown only when stderr is a terminal."""
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        yield bar


# -- export -----------------------------------------------------------------------------------


@app.command("export")
def export_(
    ctx: typer.Context,
    output_file: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (default: standard output)."),
    ] = None,
    json: Json = False,
) -> None:
    """Everything the user owns, as JSONL: agents, memories with their history, conversations."""

    async def work(s: Session) -> dict[str, Any]:
        with progress() as bar:
            task = bar.add_task("exporting", total=None)
            if output_file is None:
                return await _write(s, typer.get_text_stream("stdout"), bar, task)
            # written beside the target and renamed at the end: a crash never leaves half a file
            target = output_file.expanduser()
            if not target.parent.is_dir():
                raise FileNotFoundError(errno.ENOENT, "no such folder", str(target.parent))
            try:  # a short name, whatever the target's length
                fd, temp = tempfile.mkstemp(prefix=".mnemo-export-", dir=target.parent)
            except OSError as exc:
                raise type(exc)(exc.errno, exc.strerror, str(target.parent)) from None
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    counts = await _write(s, f, bar, task)
                os.replace(temp, target)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
            return counts

    counts = run(ctx, work, resolve_agent=False)
    if output_file is None:
        return  # the JSONL itself went to standard output
    if json:
        output.emit_json({"file": str(output_file), **counts})
    else:
        shown = ", ".join(f"{n} {name}" for name, n in counts.items())
        output.say(Text.assemble(("Exported ", "green"), shown, " to ", str(output_file)))


async def _write(s: Session, out: IO[str], bar: Progress, task: Any) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    async for record in export.records(s.memory, s.accounts, s.user):
        out.write(export.line(record))
        if record["type"] == "end":
            counts = {k: v for k, v in record.items() if k != "type"}
        elif record["type"] in ("fact", "conversation"):
            bar.update(task, advance=1, description=f"exporting {record['type']}s")
    out.flush()
    return counts


# -- backup -----------------------------------------------------------------------------------


@app.command("backup")
def backup(
    ctx: typer.Context,
    file: Annotated[
        Path, typer.Argument(dir_okay=False, help="The copy to write (replaced when it is there).")
    ],
    json: Json = False,
) -> None:
    """A copy of the whole SQLite database, every person's, while servers write to it: as of one
    moment, readable by you only. Restore it by putting it in the database's place with the servers
    stopped. PostgreSQL is backed up with pg_dump (docs/operations.md)."""
    no_user(ctx, "a backup holds every person's memories")
    options = ctx.find_object(Options) or Options()
    if options.agent is not None:
        usage("--agent does not apply: a backup holds every agent's memories")

    def start(settings: Settings) -> tuple[Path, int]:
        url = settings.database_url
        if url is not None and is_postgres_url(url):
            raise CliFailure(
                "mnemo backup copies a SQLite database; back up PostgreSQL with pg_dump (docs/operations.md)",
                BAD_INPUT,
            )
        try:
            source = Path(sqlite_path(settings))
        except ValueError as exc:
            raise CliFailure(str(exc), BAD_INPUT) from None
        try:
            with stopped_as_by_ctrl_c():
                return source, back_up(source, file.expanduser())
        except SameFile:
            raise CliFailure(
                f"{file} is the database, or a file SQLite keeps beside it: name another file", BAD_INPUT
            ) from None
        except Exception as exc:
            if not is_database_error(exc):
                raise
            raise CliFailure(f"Cannot back up {source}: {exc}") from exc

    source, size = guarded(options, start)
    if json:
        output.emit_json({"database": str(source), "file": str(file), "bytes": size})
    else:
        done = Text.assemble(("Backed up ", "green"), str(source), " to ", str(file), f" ({size:,} bytes)")
        output.say(done)


# -- import -----------------------------------------------------------------------------------


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, readable=True, help="The file to import."),
    ],
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            help="mnemo: an export; openai: chat-completions JSONL; chatgpt, claude: the"
            " conversations.json of a ChatGPT or Claude export; facts: JSONL of facts; mem0, khoj:"
            " their memories as JSON; markdown: a list of facts; auto: tell from the file.",
        ),
    ] = Format.AUTO,
    one_user: Annotated[
        bool,
        typer.Option(
            "--one-user",
            help="mem0: import every memory for --user, not for the user its user_id names.",
        ),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="The agent the conversations or facts belong to."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check the file and count; write nothing.")
    ] = False,
    json: Json = False,
) -> None:
    """Import conversations (for backfill to learn from), memories and facts, or a mnemo export."""
    options = ctx.find_object(Options) or Options()

    async def work(core: Core) -> ImportReport:
        with progress() as bar:
            tasks: dict[str, Any] = {}

            def step(stage: str, advance: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(f"importing {stage}", total=total)
                bar.update(tasks[stage], advance=advance)

            try:
                return await import_file(
                    core,
                    file,
                    user=core.settings.user,
                    agent=agent or options.agent,
                    fmt=fmt,
                    dry_run=dry_run,
                    step=step,
                    one_user=one_user,
                )
            except Conflict as exc:  # an id of the file is taken here: nothing to show again and retry
                raise CliFailure(f"Cannot import {file}: {exc}") from exc

    report = run_core(ctx, work, needs_db=False)
    learn = None
    if report.format in CONVERSATION_FORMATS and report.said_from is not None and not report.dry_run:
        learn = learn_command(ctx, [report.user], report.said_from, apply=True)
    if json:
        output.emit_json({**report.as_json(), "backfill_command": learn})
    else:
        _show(report, learn)
    if report.audit_ok is False:
        raise typer.Exit(1)


def _show(r: ImportReport, learn: str | None) -> None:
    verb = "Would import" if r.dry_run else "Imported"
    parts = []
    if r.format == "mnemo":
        parts.append(
            f"{r.agents_added} of {plural(r.agents, 'agent')}" if not r.dry_run else plural(r.agents, "agent")
        )
    if r.facts or r.format in ("mnemo", *FACT_FORMATS):
        parts.append(f"{plural(r.facts_added, 'memory')} ({r.facts_present} already here)")
    if r.conversations or r.format not in FACT_FORMATS:
        parts.append(
            f"{plural(r.conversations_added, 'conversation')} with {plural(r.messages_added, 'message')}"
            f" ({r.conversations_present} already here)"
        )
    output.say(Text.assemble((f"{verb} for {r.user}: ", "green"), "; ".join(parts)))
    if learn is not None:
        output.say(
            "The conversations are stored for `mnemo backfill` to learn from; nothing was learnt yet."
            " To learn from them:"
        )
        typer.echo(f"  {learn}")  # unwrapped, to copy
    if r.blocked:
        left = plural(r.blocked, "memory was", "memories were")
        output.say(f"{left} left out: they hold what your sensitive-data gate blocks.")
    if r.held:
        output.say(
            f"{plural(r.held, 'memory reads', 'memories read')} as instructions to an assistant: they wait"
            " for your review (mnemo review) and are not recalled until you approve them."
        )
    if r.conversations_empty:
        empty = plural(r.conversations_empty, "conversation")
        output.say(f"{empty} had no user or assistant text and were left out.")
    if r.re_embedded:
        again = plural(r.re_embedded, "memory was", "memories were")
        output.say(f"{again} embedded again with this store's model.")
    if r.audit_ok is False:
        output.error("The audit log does not verify after the import: mnemo audit verify")
