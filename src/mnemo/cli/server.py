"""Running mnemo as a service: `mnemo serve`, `mnemo worker`, `mnemo users create`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import Annotated

import typer

from .. import logs
from ..build import Core, check_database_url, is_postgres_url, shown_url, sqlite_path
from ..domain import Conflict
from ..settings import Settings
from ..store.private_files import private_directory
from ..wording import plural
from . import keys, output, usage
from .options import Json
from .runtime import BAD_INPUT, FAILED, CliFailure, Options, guarded, no_user, one_user, run_core

app = typer.Typer()
users = typer.Typer(help="The people this mnemo server keeps memories for.", no_args_is_help=True)


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default: MNEMO_HOST, else 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=1, max=65535, help="Port (default: MNEMO_PORT, else 8420)."),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", metavar="PATH", help="Where the database lives.")
    ] = None,
    worker: Annotated[
        bool | None,
        typer.Option(
            "--worker/--no-worker",
            help="Learn from turns in this process (default), or leave it to `mnemo worker`.",
        ),
    ] = None,
    json: Annotated[
        bool,
        typer.Option("--json", help="Log one JSON object a line (MNEMO_LOG_FORMAT=json); the first key too."),
    ] = False,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs). On the first start it creates a user and prints its key."""
    options = ctx.find_object(Options) or Options()

    def start(settings: Settings) -> None:
        import uvicorn

        from ..app import create_app
        from ..http.serving import uvicorn_options

        try:
            check_database_url(settings)
        except ValueError as exc:
            raise CliFailure(str(exc), BAD_INPUT) from exc
        private_directory(settings.data_dir)
        logs.to_stderr("mnemo", json=settings.log_format == "json", level=logging.INFO)
        url = settings.database_url
        where = shown_url(url) if url is not None and is_postgres_url(url) else sqlite_path(settings)
        logging.getLogger("mnemo").info("data in %s", where)
        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_level="info",
            **uvicorn_options(settings),
        )

    guarded(
        options,
        start,
        needs_db=False,
        host=host,
        port=port,
        data_dir=data_dir.expanduser() if data_dir else None,
        worker=worker,
        log_format="json" if json else None,
    )


@app.command("worker")
def worker_command(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="Process the jobs that are due now, then exit.")
    ] = False,
    json: Annotated[
        bool,
        typer.Option(
            "--json", help="Say what it did, and log, as JSON (one object a line; MNEMO_LOG_FORMAT=json)."
        ),
    ] = False,
) -> None:
    """Learn from queued turns in a process of its own, until Ctrl-C or SIGTERM.

    Run the server with --no-worker (or MNEMO_WORKER=false) to leave all the work
    to workers; several may run at once. A job in hand at shutdown is given back.
    """
    no_user(ctx, "a worker learns from every user's queued turns")

    as_json = [json]

    async def work(core: Core) -> int | None:
        as_json[0] = json or core.settings.log_format == "json"
        logs.to_stderr("mnemo worker", json=as_json[0], level=logging.INFO)
        worker = core.worker()
        if once:
            await worker.requeue_waiting()
            return await worker.drain()
        if as_json[0]:
            output.emit_line({"worker": worker.name, "state": "started"})
        else:
            output.say(f"mnemo worker {worker.name}: learning from queued turns (Ctrl-C to stop).")
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        loop = asyncio.get_running_loop()

        def shut_down() -> None:
            stop.set()
            task.cancel()  # a job in hand is released for another worker

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, shut_down)
                installed.append(sig)
        try:
            await task
        except asyncio.CancelledError:
            if not stop.is_set():
                raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
        return None

    done = run_core(ctx, work, needs_db=False)
    if as_json[0] and once:
        output.emit_json({"processed": done or 0})
    elif as_json[0]:
        output.emit_line({"state": "stopped"})
    elif once:
        output.say(f"Processed {plural(done or 0, 'job')}.")
    else:
        output.say("mnemo worker stopped.")


@users.command("create")
def users_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The new user's name, unique on this server.")],
    json: Json = False,
) -> None:
    """Create a user and print its first API key (shown this once)."""
    one_user(ctx, name, "NAME")  # the global --user, if given, names the same person

    async def work(core: Core):
        try:
            return await core.accounts.create_user(name)
        except Conflict as exc:
            raise CliFailure(f"A user named {name.strip()!r} already exists.", FAILED) from exc

    user, key, token = run_core(ctx, work, needs_db=False)
    if json:
        output.emit_json({"user": {"id": user.id, "name": user.name}, "key_id": key.id, "token": token})
        return
    output.say(f"Created user {user.name} ({user.id}). Its API key (shown once):", "green")
    typer.echo(f"  {token}")


@users.command("list")
def users_list(ctx: typer.Context, json: Json = False) -> None:
    """Everyone (or the global --user alone): name, id, when made, how many live keys, whether
    memory is on."""
    keys.list_users(ctx, json)


@users.command("rename")
def users_rename(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The user's name now.")],
    new_name: Annotated[
        str, typer.Argument(metavar="NEW_NAME", help="Their new name, unique on this server.")
    ],
    json: Json = False,
) -> None:
    """Rename a user: --user and MNEMO_USER then name them by the new name (keys keep working)."""
    one_user(ctx, name, "NAME")

    async def work(core: Core):
        user = await core.accounts.existing_user(name)
        try:
            renamed = await core.accounts.rename_user(user.id, new_name)
        except Conflict as exc:
            raise CliFailure(f"A user named {new_name.strip()!r} already exists.", FAILED) from exc
        return await core.accounts.member(renamed, await core.accounts.server_mode())

    member = run_core(ctx, work)
    if json:
        output.emit_json(keys.member_json(member))
    else:
        output.say(f"Renamed {name} to {member.user.name} ({member.user.id}).", "green")


def _disable(ctx: typer.Context, name: str, disabled: bool, json: bool) -> None:
    one_user(ctx, name, "NAME")

    async def work(core: Core):
        user = await core.accounts.existing_user(name)
        changed = await core.accounts.set_disabled(user.id, disabled)
        return await core.accounts.member(changed, await core.accounts.server_mode())

    member = run_core(ctx, work)
    if json:
        output.emit_json(keys.member_json(member))
    elif disabled:
        output.say(
            f"Disabled {name}: every key of theirs is refused until mnemo users enable {name}.", "green"
        )
    else:
        output.say(f"Enabled {name}: their keys work again.", "green")


@users.command("disable")
def users_disable(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The user's name.")],
    json: Json = False,
) -> None:
    """Refuse every key of the user (403) until enabled again; what they stored stays, and
    turns already accepted are still learnt from."""
    _disable(ctx, name, True, json)


@users.command("enable")
def users_enable(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The user's name.")],
    json: Json = False,
) -> None:
    """Let a disabled user's keys work again."""
    _disable(ctx, name, False, json)


@users.command("usage")
def users_usage(ctx: typer.Context, json: Json = False) -> None:
    """Everyone's (or the global --user's) tokens spent learning: today, the last 30 UTC days,
    the budget, what is left."""
    usage.usage_list(ctx, json)


@users.command("budget")
def users_budget(
    ctx: typer.Context,
    name: usage.UserName,
    tokens: usage.Tokens = None,
    default: usage.Default = False,
    json: Json = False,
) -> None:
    """Give the user a daily token budget of their own, or --default for the server's."""
    usage.usage_budget(ctx, name, tokens, default, json)
