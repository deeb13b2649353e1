"""Wire a Memory from Settings: the only place that picks implementations."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from .memory import Memory
from .providers.base import ChatModel, Embedder
from .settings import Settings
from .store.base import Store


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


def build_embedder(settings: Settings) -> Embedder:
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
        from .providers.embed import LocalEmbedder

        inner = LocalEmbedder()
    return CoalescingEmbedder(inner)


def build_chat(settings: Settings) -> ChatModel | None:
    """None when no model is configured: then only explicit requests are remembered."""
    if not (settings.llm_base_url and settings.llm_model):
        return None
    from .providers.chat import OpenAIChatModel

    return OpenAIChatModel(
        settings.llm_base_url, settings.llm_api_key, settings.llm_model, timeout=settings.llm_timeout
    )


async def open_memory(settings: Settings) -> Memory:
    memory = Memory(build_store(settings), build_embedder(settings), build_chat(settings), settings=settings)
    return await memory.open()
