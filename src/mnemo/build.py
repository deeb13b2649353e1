"""Wire the core from Settings: the only place that picks implementations and hands the store
and the writer to the services that work on them directly (the batch services)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .accounts import Accounts
from .batch.backfill import Backfill
from .batch.jobs import Worker
from .batch.reindex import Reindex
from .domain import utcnow
from .forgetting import Forgotten
from .health import Health
from .memory import Memory
from .observe import QUIET, Observer
from .providers.base import ChatModel, Embedder
from .settings import Settings
from .store.base import Store
from .write.writer import new_writer


class Core:
    """One store's services, wired once. The faces ask for Memory (a person's facts) and Accounts
    (people, agents, keys, switches); the batch services made here are handed the store and the
    writer, which nothing else reaches (`store` is public for the import, a Destination)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        chat: ChatModel | None = None,
        *,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = utcnow,
        observer: Observer = QUIET,
        second: Embedder | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store = store
        self.clock = clock
        self.observer = observer
        self._embedder = embedder
        self._chat = chat
        self.accounts = Accounts(store, self.settings, clock)
        self.forgotten = Forgotten(store, self.accounts)  # what learning and import drop
        self._writer = new_writer(store, embedder, chat, self.settings.write, clock, self.forgotten)
        self.memory = Memory(
            store,
            embedder,
            chat,
            settings=self.settings,
            clock=clock,
            accounts=self.accounts,
            writer=self._writer,
            forgotten=self.forgotten,
            observer=observer,
            second=second,
        )

    async def open(self) -> Core:
        await self.memory.open()
        return self

    async def close(self) -> None:
        await self.memory.close()  # the store and the models

    def worker(self, **options: Any) -> Worker:
        """The job worker, with the settings' lease, attempts, backoff and poll (`options` win);
        every turn this core's Memory queues wakes it."""
        jobs = self.settings.jobs
        configured = {
            "lease": timedelta(seconds=jobs.lease_seconds),
            "max_attempts": jobs.max_attempts,
            "backoff": timedelta(seconds=jobs.backoff_seconds),
            "poll": jobs.poll_seconds,
            "heartbeat": timedelta(seconds=self.settings.health.heartbeat_seconds),
            "observer": self.observer,
        }
        worker = Worker(self.store, self._writer, self.accounts, **{**configured, **options})
        self.memory.on_queued(worker.wake)
        return worker

    def health(self) -> Health:
        """The checks behind /readyz (on the wall clock, as the workers' heartbeats are)."""
        return Health(self.store, self._chat, self.settings.health)

    def backfill(self, **options: Any) -> Backfill:
        """A backfill run's service (`options`: progress, stop_requested)."""
        return Backfill(self.store, self._writer, self.accounts, clock=self.clock, **options)

    def reindex(self, **options: Any) -> Reindex:
        """Reindexing with the configured embedder (`options`: batch_size, progress, stop_requested)."""
        return Reindex(self.store, self._embedder, **options)


def build_store(settings: Settings) -> Store:
    """PostgreSQL for a `postgresql://` (or `postgres://`) URL; otherwise the SQLite file."""
    url = settings.database_url
    if url is not None and is_postgres_url(url):
        from .store.postgres import PostgresStore

        return PostgresStore(url)
    from .store.sqlite import SQLiteStore

    return SQLiteStore(sqlite_path(settings))


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def shown_url(url: str | None) -> str | None:
    """A database URL fit to print: any password replaced by ***."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def check_database_url(settings: Settings) -> None:
    """ValueError when the settings name a database that no store here can open."""
    url = settings.database_url
    if url is None or not is_postgres_url(url):
        sqlite_path(settings)


def sqlite_path(settings: Settings) -> str:
    """The SQLite file: `sqlite:///relative/path`, `sqlite:////absolute/path`, or the data dir."""
    url = settings.database_url
    if url is None:
        return str(settings.database_path)
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return url[len("sqlite:///") :]
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://…")


def build_embedder(settings: Settings, observer: Observer = QUIET) -> Embedder:
    """The configured embedder; concurrent calls to it are coalesced into shared batches."""
    from .providers.coalesce import CoalescingEmbedder

    if settings.embed_base_url:
        from .providers.embed import OpenAIEmbedder

        if not settings.embed_model:
            raise ValueError("MNEMO_EMBED_MODEL is required with MNEMO_EMBED_BASE_URL")
        inner: Embedder = OpenAIEmbedder(
            settings.embed_base_url, settings.embed_api_key, settings.embed_model
        )
    else:
        inner = _local_embedder(settings.embed_local)
    return CoalescingEmbedder(inner, timed=observer.embedded)


def build_second(settings: Settings) -> Embedder | None:
    """The second embedder (MNEMO_EMBED_SECOND, beside the local MiniLM only), or None."""
    if settings.embed_second is None:
        return None
    from .providers.coalesce import CoalescingEmbedder

    return CoalescingEmbedder(_local_embedder(settings.embed_second))


def _local_embedder(name: str) -> Embedder:
    if name == "multilingual-e5":
        from .providers.multilingual import MultilingualEmbedder

        return MultilingualEmbedder()
    from .providers.embed import LocalEmbedder

    return LocalEmbedder()


def build_chat(settings: Settings) -> ChatModel | None:
    """None when no model is configured: then only explicit requests are remembered."""
    if not (settings.llm_base_url and settings.llm_model):
        return None
    from .providers.chat import OpenAIChatModel

    return OpenAIChatModel(
        settings.llm_base_url, settings.llm_api_key, settings.llm_model, timeout=settings.llm_timeout
    )


def build_core(settings: Settings, observer: Observer = QUIET) -> Core:
    """The core the settings describe, not yet open; `observer` hears its timings."""
    embedder = build_embedder(settings, observer)
    chat = build_chat(settings)
    second = build_second(settings)
    settings = settings.for_model(embedder.model_name)
    return Core(build_store(settings), embedder, chat, settings=settings, observer=observer, second=second)


async def open_core(settings: Settings, observer: Observer = QUIET) -> Core:
    return await build_core(settings, observer).open()


async def open_memory(settings: Settings) -> Memory:
    """The Memory alone, for scripts (its accounts: `memory.accounts`); closing it closes all."""
    return (await open_core(settings)).memory
