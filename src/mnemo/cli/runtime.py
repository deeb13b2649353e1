"""What every command shares: the global options, one async session, and error exits.

Each command calls `run(ctx, work)` once: it loads the Settings, opens the
core (Memory and Accounts), resolves the user (and agent), awaits
`work(session)`, closes, and turns mnemo's errors into a message and an exit
code instead of a traceback.
"""

from __future__ import annotations

import asyncio
import shlex
import tomllib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError

from ..accounts import Accounts
from ..build import Core, open_core, sqlite_path
from ..domain import (
    Agent,
    Conflict,
    InvalidInput,
    MnemoError,
    NameTaken,
    NotFound,
    Scope,
    User,
    is_uuid,
    parse_time,
    utcnow,
)
from ..memory import Memory
from ..providers.base import ModelError
from ..settings import Settings, UnknownSettings
from . import output

T = TypeVar("T")

# exit codes: 1 for a failure of the request, 2 for a request that cannot be applied as given
FAILED = 1
BAD_INPUT = 2


class CliFailure(Exception):
    """A message for the person, the exit code that goes with it and the error's code
    (docs/reference/errors.md; None: the code of the mnemo error it was raised from, else
    `invalid_input` for a request that cannot be applied as given, `error` for another failure)."""

    def __init__(self, message: str, code: int = FAILED, error: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.error = error


@dataclass(frozen=True)
class Options:
    """The global options, as given on the command line (None: not given)."""

    data_dir: Path | None = None
    config: Path | None = None
    user: str | None = None
    agent: str | None = None


ID_PREFIX = 8  # the fewest characters of an id that name it, when they start one id only


@dataclass
class Session:
    settings: Settings
    memory: Memory
    accounts: Accounts
    user: User
    agent: Agent | None
    agents: list[Agent]

    @property
    def scope(self) -> Scope:
        """The assistant's view: the chosen agent, or the default one (adds, recall, turns)."""
        return Scope(self.user.id, self.agent.id if self.agent else None)

    @property
    def view(self) -> Scope:
        """The person's own view: everything they own, or only what the chosen agent sees."""
        if self.agent is not None:
            return Scope(self.user.id, self.agent.id)
        return Scope(self.user.id, all_agents=True)

    @property
    def agent_names(self) -> dict[str, str]:
        return {a.id: a.name for a in self.agents}

    async def full_id(self, given: str, kind: str = "memory") -> str:
        """A memory's id as typed (or a turn's or a receipt's, by `kind`): the whole id, or a
        unique start of it of at least ID_PREFIX characters (CliFailure when it starts several;
        NotFound when none)."""
        given = given.strip().lower()
        if is_uuid(given) or len(given) < ID_PREFIX:
            return given  # whole, or too short to be a prefix: the store says whether it is one
        found = await self.memory.ids_starting(self.view, given, kind=kind)
        if len(found) > 1:
            raise CliFailure(
                f"{given!r} starts several {kind} ids ({', '.join(found)}, …): type more of it",
                error=InvalidInput.code,
            )
        return found[0] if found else given


def _capitalised(text: str) -> str:
    """`text` opening with a capital, unless its first word is a name as given (a file's,
    "notes_2024.md"), which keeps its own case."""
    first = text.split(maxsplit=1)[0] if text.strip() else ""
    return text if any(c in first for c in "./_\\") else text[:1].upper() + text[1:]


def usage(message: str) -> NoReturn:
    """A request that cannot be applied as given: say why and exit 2."""
    fail(_capitalised(message) + ("" if message.endswith(".") else "."), BAD_INPUT, InvalidInput.code)


def chosen_users(ctx: typer.Context, users: str | None) -> list[str] | None:
    """Whom a command over many users (--users NAMES) is for: those names, or the person the
    global --user names (`mnemo --user bob backfill`), or everyone (None). A usage error when
    --users names no one, or other people than --user."""
    names = [n.strip() for n in users.split(",") if n.strip()] if users is not None else None
    if users is not None and not names:
        usage("--users names no user")
    chosen = global_user(ctx)
    if chosen is None:
        return names
    if names is not None and names != [chosen]:
        usage("give --user or --users, not both")
    return [chosen]


def one_user(ctx: typer.Context, given: str | None, what: str) -> str:
    """The user a command names itself (`what`: its option or argument), else the one the
    global --user names; a usage error when both are given and differ, or neither is."""
    chosen = global_user(ctx)
    if given is not None and chosen is not None and given != chosen:
        usage(f"give --user or {what}, not both")
    name = given if given is not None else chosen
    if name is None:
        usage(f"give {what} NAME (or mnemo --user NAME …)")
    return name


def no_user(ctx: typer.Context, why: str) -> None:
    """A command that acts for every user: the global --user is a usage error, not ignored."""
    if global_user(ctx) is not None:
        usage(f"--user does not apply: {why}")


def global_user(ctx: typer.Context) -> str | None:
    """The name the global --user gave (None: not given; MNEMO_USER is a setting, not this)."""
    options = ctx.find_object(Options)
    return options.user if options is not None else None


def shown_command(ctx: typer.Context, *args: str, user: str | None = None) -> str:
    """The `mnemo` command line that runs `args` where this command ran (with its --data-dir
    and --config) for `user`, quoted for a shell: for a person to copy."""
    options = ctx.find_object(Options) or Options()
    head = [*(["--data-dir", str(options.data_dir)] if options.data_dir else [])]
    head += [*(["--config", str(options.config)] if options.config else [])]
    head += [*(["--user", user] if user is not None else [])]
    return shlex.join(["mnemo", *head, *args])


# -- settings and the database file ---------------------------------------------


def load_settings(options: Options, **overrides: object) -> Settings:
    """Settings from the global options; `overrides` (None: not given) win over them."""
    given: dict[str, Any] = {"data_dir": options.data_dir, "user": options.user}
    given.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings.load(options.config, **given)
    except FileNotFoundError as exc:
        raise CliFailure(f"Config file not found: {options.config}", BAD_INPUT) from exc
    except IsADirectoryError as exc:
        raise CliFailure(f"Config file {options.config} is a folder: name a TOML file", BAD_INPUT) from exc
    except UnicodeDecodeError as exc:
        raise CliFailure(f"Cannot read config file {options.config}: not UTF-8 text", BAD_INPUT) from exc
    except tomllib.TOMLDecodeError as exc:
        raise CliFailure(f"Cannot read config file {options.config}: {exc}", BAD_INPUT) from exc
    except UnknownSettings as exc:
        lines = "".join(f"\n  {unknown}" for unknown in exc.unknown)
        raise CliFailure(f"Unknown settings (see mnemo doctor):{lines}", BAD_INPUT) from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        raise CliFailure(f"Invalid settings: {problems}", BAD_INPUT) from exc


def database_file(settings: Settings) -> Path | None:
    """The SQLite file the settings point at; None when it cannot be known (another URL)."""
    try:
        path = sqlite_path(settings)
    except ValueError:
        return None
    return None if path == ":memory:" else Path(path)


def require_database(settings: Settings) -> None:
    """Read-only commands never create the database: say so when there is none yet."""
    path = database_file(settings)
    if path is not None and not path.exists():
        raise CliFailure(
            f"No mnemo database at {path} yet; add a memory first (mnemo add …)", error=NotFound.code
        )


# -- parsing helpers for options --------------------------------------------------


def parse_when(value: str) -> datetime:
    """An ISO date or date-time (a naive one is UTC), or "now"."""
    if value.strip().lower() == "now":
        return utcnow()
    try:
        parsed = parse_time(value.strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise typer.BadParameter(
            f"{value!r} is not an ISO date or date-time (e.g. 2026-03-01 or 2026-03-01T14:30:00+01:00)"
        )
    return parsed


# -- running one command ----------------------------------------------------------


def run(
    ctx: typer.Context,
    work: Callable[[Session], Awaitable[T]],
    *,
    creates: bool = False,
    fact_id: str | None = None,
    resolve_agent: bool = True,
) -> T:
    """Run `work` in one event loop over an open core; mnemo's errors become exits.

    `creates`: the command adds something, and creates the database and the user on
    first use. Any other command refuses, creating nothing, when either is missing: a
    look around, or a typo in --user, leaves no user behind to get in an import's way.
    `fact_id`: the id the command acts on, for the "No memory with id" message.
    """
    options = ctx.find_object(Options) or Options()

    def start(settings: Settings) -> T:
        return asyncio.run(_session(settings, options, work, resolve_agent, creates))

    return guarded(options, start, needs_db=not creates, fact_id=fact_id)


def run_core(ctx: typer.Context, work: Callable[[Core], Awaitable[T]], *, needs_db: bool = True) -> T:
    """Like `run`, over the core alone: no user is looked up (or created) on the way."""
    options = ctx.find_object(Options) or Options()

    async def session(settings: Settings) -> T:
        core = await _open(settings)
        try:
            return await work(core)
        except Exception as exc:
            if is_database_error(exc):
                raise CliFailure(f"Database error: {exc}") from exc
            raise
        finally:
            await core.close()

    return guarded(options, lambda s: asyncio.run(session(s)), needs_db=needs_db)


def guarded(
    options: Options,
    start: Callable[[Settings], T],
    *,
    needs_db: bool = True,
    fact_id: str | None = None,
    **overrides: object,
) -> T:
    """Load the settings (with `overrides`) and call `start`; mnemo's errors become exits."""
    try:
        settings = load_settings(options, **overrides)
        if needs_db:
            require_database(settings)
        return start(settings)
    except CliFailure as exc:
        fail(str(exc), exc.code, exc.error or _error_code(exc.__cause__, exc.code))
    except NotFound as exc:
        fail(f"No memory with id {fact_id}." if fact_id is not None else _sentence(exc), FAILED, exc.code)
    except InvalidInput as exc:  # what HTTP answers 422: the request cannot be applied as given
        fail(_sentence(exc), BAD_INPUT, exc.code)
    except NameTaken as exc:
        fail(_sentence(exc), FAILED, exc.code)
    except Conflict as exc:
        fail(f"{_sentence(exc)} Show it again (mnemo show …) and retry.", FAILED, exc.code)
    except MnemoError as exc:
        fail(_sentence(exc), FAILED, exc.code)
    except ModelError as exc:
        fail(f"The model failed: {exc}", FAILED, exc.code)
    except OSError as exc:  # e.g. a data directory that cannot be created
        where = f" {exc.filename}" if exc.filename else ""
        fail(f"Cannot use{where}: {exc.strerror or exc}", FAILED, MnemoError.code)
    raise AssertionError("unreachable")  # pragma: no cover


async def _open(settings: Settings) -> Core:
    try:
        return await open_core(settings)
    except ValueError as exc:  # an unsupported database URL, an embed URL without a model
        raise CliFailure(_sentence(exc), BAD_INPUT) from exc
    except ImportError as exc:
        raise CliFailure(_sentence(exc), FAILED) from exc
    except Exception as exc:
        if is_database_error(exc):
            raise CliFailure(f"Cannot open the database: {exc}") from exc
        raise


async def _session(
    settings: Settings,
    options: Options,
    work: Callable[[Session], Awaitable[T]],
    resolve_agent: bool,
    creates: bool,
) -> T:
    core = await _open(settings)
    try:
        accounts = core.accounts
        user = await (accounts.user if creates else accounts.find_user)(settings.user)
        if user is None:
            raise CliFailure(f"No user named {settings.user!r}.", error=NotFound.code)
        agents = await accounts.agents(user.id)
        agent = None
        if resolve_agent and options.agent is not None:
            agent = next((a for a in agents if a.name == options.agent), None)
            if agent is None:
                raise CliFailure(
                    f"No agent named {options.agent!r} for user {user.name!r}; "
                    f"create it with: mnemo agents create {options.agent}",
                    error=NotFound.code,
                )
        return await work(Session(settings, core.memory, accounts, user, agent, agents))
    except Exception as exc:
        if is_database_error(exc):
            raise CliFailure(f"Database error: {exc}") from exc
        raise
    finally:
        await core.close()


def is_database_error(exc: BaseException) -> bool:
    """sqlite3-style errors from the store's driver, without importing the driver here."""
    return any(cls.__name__ == "DatabaseError" for cls in type(exc).__mro__)


def _sentence(exc: BaseException) -> str:
    text = _capitalised(str(exc).strip() or type(exc).__name__)
    return text if text.endswith((".", "!", "?")) else text + "."


def _error_code(cause: BaseException | None, exit_code: int) -> str:
    """The error code of a failure raised from `cause` with `exit_code`."""
    if isinstance(cause, MnemoError | ModelError):
        return cause.code
    return InvalidInput.code if exit_code == BAD_INPUT else MnemoError.code


def fail(message: str, exit_code: int, error: str) -> NoReturn:
    """Say why the command failed, its error's code first (`not_found: No memory with id …`: the
    codes of docs/reference/errors.md), and exit with `exit_code`."""
    output.error(f"{error}: {message}")
    raise typer.Exit(exit_code)
