"""The store for many users and several processes: PostgreSQL with pgvector.

psycopg 3, async, over a connection pool. Every pooled connection runs as
APP_ROLE, which row-level security confines to the rows of the user named by
the transaction's `mnemo.user_id` setting (see migrations/postgres_security.py);
each method opens one transaction and names its user first. Writes to one user's
facts are serialised by a per-user advisory lock, so that the user's event
chain never forks, however many processes write.

Vectors, lexical search and the queue are in their own modules:
postgres_search.py, postgres_commit.py, postgres_jobs.py, postgres_people.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool

from ..domain import Event, Fact, NotFound, Scope, Status, StorageFull, readable_agent_keys, utcnow
from .migrate import pending
from .migrations.postgres import APP_ROLE, LOCK_NAMESPACE, MIGRATIONS
from .postgres_backfill import BackfillMixin
from .postgres_commit import CommitMixin
from .postgres_jobs import JobsMixin
from .postgres_people import PeopleMixin
from .postgres_reindex import ReindexMixin
from .postgres_rows import (
    AGENT_COLUMNS,
    EVENT_COLUMNS,
    FACT_COLUMNS,
    agent_from,
    event_from,
    fact_from,
    readable,
)
from .postgres_search import EXACT_BELOW, MIN_SHARE, SearchMixin
from .postgres_transfer import TransferMixin


def connection_url(url: str) -> str:
    """A libpq URL from `postgresql://…`, `postgres://…` or SQLAlchemy's `postgresql+psycopg://…`."""
    if url.startswith("postgresql+psycopg://"):
        return "postgresql://" + url[len("postgresql+psycopg://") :]
    return url


async def _configure(conn: psycopg.AsyncConnection) -> None:
    """Each pooled connection: the application role for good, UTC times, the vector type.

    The role is set for the session, not per transaction: then no statement on
    a pooled connection ever runs as the owner, whom the policies do not hold.
    The owner (the URL's own role) is used only by migrations and index builds,
    on connections of their own.
    """
    await conn.execute(f"SET ROLE {APP_ROLE}")
    await conn.execute("SET TIME ZONE 'UTC'")
    await register_vector_async(conn)


class PostgresStore(
    PeopleMixin, JobsMixin, SearchMixin, CommitMixin, BackfillMixin, TransferMixin, ReindexMixin
):
    """`url`: a libpq URL or conninfo string for the role that owns mnemo's schema.
    `min_size`/`max_size`: the connection pool's bounds. `exact_below`/`min_share`:
    when a user's vectors are searched exactly rather than through HNSW (see
    postgres_search.py)."""

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], datetime] = utcnow,
        min_size: int = 1,
        max_size: int = 10,
        exact_below: int = EXACT_BELOW,
        min_share: float = MIN_SHARE,
    ) -> None:
        self.url = connection_url(url)
        self._clock = clock
        self._min_size = min_size
        self._max_size = max_size
        self.exact_below = exact_below
        self.min_share = min_share
        self._pool: AsyncConnectionPool | None = None
        self._valid_indexes: set[int] = set()  # dimensions whose HNSW index is ready
        self._common: tuple[float | None, list[str]] = (None, [])  # (read at, the lexical common words)
        self._index_builds: dict[int, asyncio.Task] = {}

    # -- plumbing -------------------------------------------------------------

    async def open(self) -> None:
        await asyncio.to_thread(self._migrate)
        pool = AsyncConnectionPool(
            self.url,
            min_size=self._min_size,
            max_size=self._max_size,
            kwargs={"autocommit": True},
            configure=_configure,
            open=False,
            name="mnemo",
        )
        await pool.open(wait=True, timeout=30)
        self._pool = pool

    def _migrate(self) -> None:
        """Bring the schema up to date, one transaction per migration; one process at a time."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s, 0)", (LOCK_NAMESPACE,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations"
                " (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
            )
            applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for migration in pending(applied, MIGRATIONS):
                with conn.transaction(), conn.cursor() as cur:
                    migration.apply(cur)
                    cur.execute(
                        "INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                        (migration.version, migration.name, utcnow()),
                    )
            conn.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_NAMESPACE,))

    async def close(self) -> None:
        for task in list(self._index_builds.values()):
            task.cancel()
        await asyncio.gather(*self._index_builds.values(), return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def schema_versions(self) -> list[int]:
        async with self._tx() as cur:
            await cur.execute("SELECT version FROM schema_migrations ORDER BY version")
            return [r[0] for r in await cur.fetchall()]

    @asynccontextmanager
    async def _tx(self, user_id: str | None = None) -> AsyncIterator[psycopg.AsyncCursor]:
        """One transaction; with `user_id`, row-level security lets it see that user's rows only."""
        if self._pool is None:
            raise RuntimeError("the store is not open")
        try:
            async with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                if user_id is not None:
                    await self._as_user(cur, user_id)
                yield cur
        except psycopg.errors.DiskFull as exc:
            raise StorageFull("the database's disk is full: nothing was stored") from exc

    @staticmethod
    async def _as_user(cur: psycopg.AsyncCursor, user_id: str) -> None:
        await cur.execute("SELECT set_config('mnemo.user_id', %s, true)", (user_id,))

    # -- visibility ------------------------------------------------------------

    async def _agent_keys(self, cur: psycopg.AsyncCursor, scope: Scope) -> list[str] | None:
        if scope.all_agents:
            return None
        await cur.execute(
            f"SELECT {AGENT_COLUMNS} FROM agents WHERE user_id = %s AND deleted_at IS NULL",
            (scope.user_id,),
        )
        return readable_agent_keys(scope, [agent_from(r) for r in await cur.fetchall()])

    async def _visible(self, cur: psycopg.AsyncCursor, scope: Scope) -> tuple[str, dict[str, Any]]:
        """The WHERE clause of the agent rule over `facts f`, with named parameters."""
        keys = await self._agent_keys(cur, scope)
        if keys is None:
            return "f.user_id = %(user)s", {"user": scope.user_id}
        return (
            "f.user_id = %(user)s AND COALESCE(f.agent_id, '') = ANY (%(agents)s)",
            {"user": scope.user_id, "agents": keys},
        )

    # -- facts: reads ----------------------------------------------------------

    async def _facts(self, scope: Scope, where: str, params: dict[str, Any], tail: str = "") -> list[Fact]:
        """The scope's facts matching `where`, in the order and number `tail` says."""
        async with self._tx(scope.user_id) as cur:
            visible, vparams = await self._visible(cur, scope)
            await cur.execute(
                f"SELECT {FACT_COLUMNS} FROM facts f WHERE {visible} AND ({where}) {tail}",
                {**vparams, **params},
            )
            return [fact for _, fact in readable(await cur.fetchall(), fact_from, "memory", 1)]

    async def get_fact(self, scope: Scope, fact_id: str) -> Fact:
        found = await self._facts(scope, "f.id = %(id)s", {"id": fact_id})
        if not found:
            raise NotFound(f"no memory {fact_id}")
        return found[0]

    async def list_facts(
        self,
        scope: Scope,
        *,
        statuses: Sequence[Status] | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Fact]:
        where, params = "true", {"limit": limit, "offset": offset}
        if statuses:
            where, params["statuses"] = "f.status = ANY (%(statuses)s)", [str(s) for s in statuses]
        tail = "ORDER BY f.created_at DESC, f.rowid DESC LIMIT %(limit)s OFFSET %(offset)s"
        return await self._facts(scope, where, params, tail)

    async def find_by_hash(
        self, scope: Scope, text_hash: str, *, statuses: Sequence[Status] = (Status.ACTIVE,)
    ) -> list[Fact]:
        return await self._facts(
            scope,
            "f.text_hash = %(hash)s AND f.status = ANY (%(statuses)s)",
            {"hash": text_hash, "statuses": [str(s) for s in statuses]},
            "ORDER BY f.rowid",
        )

    async def recent(self, scope: Scope, since: datetime, k: int) -> list[Fact]:
        return await self._facts(
            scope,
            "f.status = 'active' AND f.last_seen_at >= %(since)s",
            {"since": since, "k": k},
            "ORDER BY f.last_seen_at DESC, f.rowid DESC LIMIT %(k)s",
        )

    async def pinned(self, scope: Scope) -> list[Fact]:
        return await self._facts(
            scope, "f.pinned AND f.status = 'active'", {}, "ORDER BY f.created_at, f.rowid"
        )

    # -- the audit log -----------------------------------------------------------

    async def events(
        self, user_id: str, *, fact_id: str | None = None, until: datetime | None = None
    ) -> list[Event]:
        sql = f"SELECT {EVENT_COLUMNS} FROM fact_events WHERE user_id = %s"
        params: list[Any] = [user_id]
        if fact_id is not None:
            sql += " AND fact_id = %s"
            params.append(fact_id)
        async with self._tx(user_id) as cur:
            await cur.execute(sql + " ORDER BY seq", params)
            events = [e for _, e in readable(await cur.fetchall(), event_from, "event", 0)]
        return [e for e in events if until is None or e.at <= until]
