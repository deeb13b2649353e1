"""`mnemo backfill`: learn from past conversations already stored in mnemo, or take that back."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..batch.backfill import KINDS, Backfill, DeleteReport, NoModel, Report, Stop
from ..build import Core
from ..domain import as_utc
from ..wording import plural
from . import output
from .interrupt import two_step_interrupt
from .options import Json
from .runtime import chosen_users, parse_when, run_core, shown_command, usage

app = typer.Typer()

INTERRUPTED = 130  # as a shell reports a command ended by Ctrl-C


@app.command()
def backfill(
    ctx: typer.Context,
    users: Annotated[
        str | None,
        typer.Option(
            "--users",
            metavar="NAMES",
            help="Comma-separated user names (default: the global --user if given, else everyone with"
            " conversations).",
        ),
    ] = None,
    lookback_days: Annotated[
        int | None,
        typer.Option(
            "--lookback-days",
            min=1,
            metavar="N",
            help="Learn from messages said in the last N days (default 7). With --delete: take back only"
            " what was learnt from messages of the last N days (default: everything backfill learnt).",
        ),
    ] = None,
    since: Annotated[
        datetime | None,
        typer.Option(
            "--since",
            parser=parse_when,
            metavar="DATE",
            help="Instead of --lookback-days: from messages said at or after DATE (ISO date or"
            " date-time, naive = UTC), however long ago (an import's closing line gives it).",
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option("--batch-size", min=1, metavar="N", help="Conversations read at a time (default 10)."),
    ] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Write; without it, only report what would change.")
    ] = False,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the interrupted run, with its users, window and --force."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Learn again from conversations an earlier run went through.")
    ] = False,
    delete: Annotated[
        bool,
        typer.Option("--delete", help="Retract what backfill learnt (nothing a person has changed since)."),
    ] = False,
    json: Json = False,
) -> None:
    """Learn from past conversations stored in mnemo (a dry run unless --apply).

    Each chosen user's conversations with messages in the window are read oldest
    first, --batch-size at a time, and cut into turns (a user message and the
    replies after it); each turn whose user message was said in the window is
    learnt from as after a live reply (extraction over it and the exchange
    before, reconciliation with the whole memory, the review policy, the memory
    switch), with actor `backfill` and the source message on every fact. Facts
    are dated when backfill writes them; relative dates are read against when
    the turn was said. A dry run runs the models too (they are what knows what
    would change) but writes nothing; each turn is compared with memory as it
    is now, so a fact stated in two turns counts twice there.

    The window is the last --lookback-days (7), or from --since DATE. When it
    leaves out user messages no run learnt from (an imported export is older
    than a week), the report says how many, in how many conversations, and the
    command whose --since reaches back to the oldest.

    It needs a chat model (MNEMO_LLM_BASE_URL, MNEMO_LLM_MODEL): without one it
    refuses, rather than learn only explicit requests and mark the conversations
    as done.

    Each turn is marked as learnt in the database in the same transaction as its
    facts: a later run skips it (--force learns it again), and after Ctrl-C, a
    failing model or a crash, --resume carries on with exactly the turns left,
    so none is learnt from twice or skipped. Ctrl-C finishes the turn in hand,
    then stops (exit 130; a second Ctrl-C abandons the turn, which is then
    written whole or not at all); a failure stops with exit 1. A new --apply
    run replaces the interrupted one, which can then no longer be resumed.

    --delete retracts the active facts backfill created (and rejects the ones it
    held for review), with a reason, so `mnemo restore` can bring one back; a
    fact a person has edited, pinned or approved since is kept. Dry run unless
    --apply. It does not reset the progress: learn again with --force.
    """
    names = chosen_users(ctx, users)  # `mnemo --user NAME backfill`: that person
    window = lookback_days is not None or since is not None
    if resume and (names is not None or window or force or batch_size is not None):
        usage(
            "--resume continues the interrupted run as it was: give no --user, --users, --lookback-days,"
            " --since, --batch-size or --force with it"
        )
    if lookback_days is not None and since is not None:
        usage("give --lookback-days or --since, not both")
    if delete and (resume or force or batch_size is not None):
        usage("--delete takes --users, --lookback-days or --since, and --apply only")

    if delete:
        _delete(ctx, names, lookback_days, since, apply, json)
        return

    async def work(core: Core) -> tuple[Backfill, Report]:
        if core.memory.chat is None:
            raise NoModel(
                "backfill needs a chat model: set MNEMO_LLM_BASE_URL and MNEMO_LLM_MODEL. Without one only"
                ' explicit requests ("remember that …") could be learnt, and the conversations would be'
                " marked as done."
            )
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        task: TaskID  # added once the users are known; the progress callback reads it
        with two_step_interrupt("turn") as interrupt:
            job = core.backfill(
                progress=lambda user, n: progress.advance(task, n),
                stop_requested=lambda: interrupt.requested,
            )
            if resume:
                run = await job.interrupted_run()
            else:
                run = await job.new_run(
                    users=names,
                    lookback_days=lookback_days if lookback_days is not None else 7,
                    since=since,
                    force=force,
                    batch_size=batch_size or 10,
                )
            planned = await job.plan_users(run)
            total = sum(len(c) for _, c in planned)
            task = progress.add_task("dry run" if not apply else "learning", total=total)
            try:
                with progress:
                    report = await job.run(run, apply=apply, planned=planned)
            except asyncio.CancelledError:
                if job.report is None:
                    raise
                report = job.report
                user, conversation = job.current or ("", None)
                report.stopped = Stop(user, conversation, "abandoned", interrupted=True)
                interrupt.forgive()
            return job, report

    _, report = run_core(ctx, work)
    widen = _widen(ctx, report)
    if json:
        found = report.to_json()
        found["outside_window"]["widen"] = widen
        output.emit_json(found)
    else:
        _show(report, widen)
    if report.stopped is not None:
        if not json:
            _say_where(report)
        raise typer.Exit(INTERRUPTED if report.stopped.interrupted else 1)


def _widen(ctx: typer.Context, report: Report) -> str | None:
    """The command that runs again from the oldest message the window left out (None: it left
    none out): the same users, --force and --apply, with --since that message's day."""
    oldest = report.outside[2]
    if oldest is None:
        return None
    return learn_command(ctx, report.run.users, oldest, force=report.run.force, apply=report.applied)


def learn_command(
    ctx: typer.Context, users: list[str] | None, oldest: datetime, *, force: bool = False, apply: bool = False
) -> str:
    """`mnemo backfill` for these users (None: everyone) over the messages said since `oldest`'s
    day (UTC), for a person to copy."""
    args = ["backfill", "--since", as_utc(oldest).date().isoformat()]
    if users is not None and len(users) > 1:
        args[1:1] = ["--users", ",".join(users)]
    args += [*(["--force"] if force else []), *(["--apply"] if apply else [])]
    return shown_command(ctx, *args, user=users[0] if users is not None and len(users) == 1 else None)


def _show(report: Report, widen: str | None) -> None:
    table = Table(title="Backfill" + ("" if report.applied else " (dry run: nothing written)"))
    table.add_column("user", no_wrap=True)
    for name in ("conversations", "learnt", "done before", "turns", *KINDS):
        table.add_column(name, justify="right")
    for u in report.users:
        if u.skipped:
            table.add_row(Text(u.user), str(u.conversations), Text(u.skipped, style="yellow"))
            continue
        table.add_row(
            Text(u.user),
            *(str(v) for v in (u.conversations, u.learnt, u.done_before, u.turns)),
            *(str(u.counts[k]) for k in KINDS),
        )
    output.show(table)
    for u in report.users:
        for text in u.samples:
            output.say(Text.assemble((f"{u.user}: ", "dim"), text))
        if u.problems:
            output.error(f"{u.user}: {len(u.problems)} problem(s), e.g. {u.problems[0]}")
    conversations, messages, oldest = report.outside
    if oldest is not None and report.run.since is not None:
        output.say(
            f"Left out: {plural(conversations, 'conversation')} with {plural(messages, 'user message')}"
            f" said before the window (since {report.run.since:%Y-%m-%d %H:%M} UTC) and not learnt yet,"
            f" the oldest on {as_utc(oldest):%Y-%m-%d}. To learn from them too:",
            "yellow",
        )
        typer.echo(f"  {widen}")  # unwrapped, to copy
    if report.stopped is None:
        if report.applied:
            output.say(f"Done (run {report.run.id}).", "green")
        else:
            output.say("Dry run: nothing was written. Add --apply to learn.")


def _say_where(report: Report) -> None:
    stop = report.stopped
    assert stop is not None
    where = f"user {stop.user}" + (f", conversation {stop.conversation_id}" if stop.conversation_id else "")
    if not report.applied:
        output.error(f"Stopped at {where}: {stop.reason}. Nothing was written (dry run).")
        return
    output.error(
        f"Stopped at {where}: {stop.reason}. Every turn before it is learnt and marked;"
        " continue with: mnemo backfill --apply --resume"
    )


def _delete(
    ctx: typer.Context,
    names: list[str] | None,
    lookback_days: int | None,
    since: datetime | None,
    apply: bool,
    json: bool,
) -> None:
    async def work(core: Core) -> DeleteReport:
        job = core.backfill()
        start = None
        if lookback_days is not None or since is not None:
            start = (await job.new_run(lookback_days=lookback_days, since=since)).since
        return await job.delete(names, start, apply=apply)

    report = run_core(ctx, work)
    if json:
        output.emit_json(report.to_json())
        return
    _show_delete(report)


def _show_delete(report: DeleteReport) -> None:
    title = "Backfill --delete" + ("" if report.applied else " (dry run: nothing written)")
    table = Table(title=title)
    table.add_column("user", no_wrap=True)
    for name in ("retracted", "rejected", "kept (a person changed them)"):
        table.add_column(name, justify="right")
    rows: list[dict[str, Any]] = report.users
    for u in rows:
        table.add_row(Text(u["user"]), str(u["retracted"]), str(u["rejected"]), str(u["kept_edited"]))
    output.show(table)
    for u in rows:
        for text in u["samples"]:
            output.say(Text.assemble((f"{u['user']}: ", "dim"), text))
    if not report.applied:
        output.say("Dry run: nothing was written. Add --apply to retract.")
