"""The store for many users and several processes: PostgreSQL with pgvector.

psycopg 3, async, over a connection pool. Every pooled connection runs as
APP_ROLE, which row-level security confines to the rows of the user named by
the transaction's `mnemo.user_id` setting (see migrations/postgres_security.py);
each store call is one transaction that enters its user first. Writes to one
user's facts are serialised by a per-user advisory lock, so that the user's
event chain never forks, however many processes write.

What is PostgreSQL's own: entering a user and the questions across users
(`PgTx`), a commit's statements (many rows each for new facts, else pipelined) and the counts that choose the
vector search (here), the search itself (postgres_search.py) and the job
claim (mnemo_claim_candidates, then mnemo_claim_job_of: FOR UPDATE SKIP LOCKED).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from .. import audit
from ..domain import Change, Conflict, Event, Fact, Job, Scope, Status, StorageFull, utcnow
from .base import ScoredFact, Unembedded
from .fulltext import query_words
from .migrate import APPLIED, RECORD, RECORDS, pending
from .migrations.postgres import APP_ROLE, LOCK_NAMESPACE, MIGRATIONS, PROPAGATE_SETTINGS
from .migrations.postgres_citus import CITUS_MIGRATION, async_commit_nodes, distribute
from .postgres_search import EXACT_BELOW, MIN_SHARE, Search
from .sql import facts, jobs
from .sql.store import P, SQLStore, T, TxFn
from .sql.transfer import imported_event
from .sql.tx import Params, Row, as_format

# how many users whose turn is due a claim tries, oldest first, when others claim at once
CLAIM_CANDIDATES = 8
# Erasure at rest: PostgreSQL keeps an updated or deleted row's old version in the table and
# index files (a plain VACUUM frees the space without overwriting it) until the table is
# rewritten. Every table an erasure writes to, rewritten by this one statement, leaves no
# erased word in any table or index file (tests/store/test_postgres.py reads them all);
# `mnemo doctor` and docs/reliability.md name it.
ERASED_TABLES = (
    "facts",
    "fact_events",
    "fact_vectors",
    "messages",
    "conversations",
    "jobs",
    "backfill_progress",
    "api_keys",
    "recalls",
)
AT_REST = f"VACUUM FULL {', '.join(ERASED_TABLES)}"
Counts = dict[str, int]  # how a commit moved the user's vectors, per model
log = logging.getLogger(__name__)


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
    # On a Citus coordinator, a transaction's SET LOCAL (its user, the HNSW walk's settings) is
    # sent on to the workers that run its statements; elsewhere this is an unused placeholder.
    await conn.execute(f"SET {PROPAGATE_SETTINGS} = 'local'")
    await register_vector_async(conn)


class PgTx:
    """A transaction on a pooled connection, acting for the user it entered last."""

    true = "true"

    def __init__(self, cursor: psycopg.AsyncCursor) -> None:
        self.cursor = cursor
        self.committed: list[Callable[[], None]] = []

    async def execute(self, sql: str, params: Params = ()) -> int:
        await self.cursor.execute(as_format(sql), params)
        return self.cursor.rowcount

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        await self.cursor.execute(as_format(sql), params)
        return await self.cursor.fetchone()

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        await self.cursor.execute(as_format(sql), params)
        return await self.cursor.fetchall()

    async def many(self, sql: str, rows: Sequence[Params]) -> None:
        for params in rows:
            await self.execute(sql, params)

    def json(self, value: Any) -> Any:
        return Jsonb(value)

    def json_has(self, array: str, value: str) -> str:
        return f"{array} @> to_jsonb({value})"

    def json_text(self, document: str, key: str) -> str:
        return f"({document} ->> '{key}')"

    def after_commit(self, then: Callable[[], None]) -> None:
        self.committed.append(then)

    async def words_of(self, user_id: str, words: Sequence[str]) -> list[str] | None:
        """The message's own column: an array of its words, each once, under a GIN index."""
        return list(dict.fromkeys(words)) or None

    async def drop_words(self, value: Any) -> None:
        pass  # the array went nowhere else

    async def messages_with_words(
        self, user_id: str, phrases: Sequence[Sequence[str]], after: Any, limit: int
    ) -> list[Row]:
        """By id: the arrays that hold all of a phrase's words (their order is `says`'s to
        check), found through the GIN index."""
        holds = " OR ".join(["words @> ?"] * len(phrases))
        later, params = ("", ()) if after is None else (" AND id > ?", (after,))
        return await self.all(
            "SELECT id, created_at, conversation_id, id, content FROM messages"
            f" WHERE user_id = ? AND erased_at IS NULL AND ({holds}){later} ORDER BY id LIMIT ?",
            (user_id, *(list(dict.fromkeys(p)) for p in phrases), *params, limit),
        )

    async def enter(self, user_id: str) -> None:
        # SET LOCAL, not set_config(): Citus sends the former on to the workers (see _configure)
        await self.cursor.execute(sql.SQL("SET LOCAL mnemo.user_id = {}").format(sql.Literal(user_id)))

    async def lock_user(self, user_id: str) -> None:
        await self.cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, user_id))

    async def _answer(self, sql: str, params: Params) -> Any:
        await self.cursor.execute(sql, params)
        row = await self.cursor.fetchone()
        return row[0] if row else None

    async def user_named(self, name: str) -> str | None:
        found: str | None = await self._answer("SELECT mnemo_user_named(%s)", (name,))
        return found

    async def key_owner(self, key_id: str) -> str | None:
        return await self._entered(await self._answer("SELECT mnemo_key_owner(%s)", (key_id,)))

    async def claimant(self, job_id: str, worker: str) -> str | None:
        return await self._entered(await self._answer("SELECT mnemo_claimant(%s, %s)", (job_id, worker)))

    async def _entered(self, user_id: str | None) -> str | None:
        if user_id is not None:
            await self.enter(user_id)
        return user_id

    async def any_user(self) -> bool:
        return bool(await self._answer("SELECT mnemo_any_user()", ()))

    async def users_with(self, table: str) -> list[str]:
        function = {"facts": "mnemo_users_with_facts", "conversations": "mnemo_users_with_conversations"}[
            table
        ]
        await self.cursor.execute(f"SELECT * FROM {function}()")
        return [r[0] for r in await self.cursor.fetchall()]

    async def user_ids(self) -> list[str]:
        await self.cursor.execute("SELECT * FROM mnemo_user_ids()")
        return [r[0] for r in await self.cursor.fetchall()]

    async def job_counts(self) -> list[tuple[str, int]]:
        await self.cursor.execute("SELECT * FROM mnemo_job_counts()")
        return [(r[0], int(r[1])) for r in await self.cursor.fetchall()]


@dataclass
class _Vector:
    """The cursors holding how a change moved its fact's vectors, read after the pipeline."""

    removed: psycopg.AsyncCursor | None = None  # the purged fact's models
    old: psycopg.AsyncCursor | None = None  # the model, if it had a vector of it before
    gone: psycopg.AsyncCursor | None = None  # the other models' vectors of an edited text
    written: psycopg.AsyncCursor | None = None  # a row if the vector was written


@dataclass
class _Sent:
    """The cursors holding one change's answers, read after the pipeline."""

    change: Change
    fact: psycopg.AsyncCursor
    event: psycopg.AsyncCursor | None
    vector: _Vector


_ROWID = "(SELECT rowid FROM facts WHERE user_id = %(user)s AND id = %(id)s)"


class PostgresStore(SQLStore[PgTx, Counts]):
    """`url`: a libpq URL or conninfo string for the role that owns mnemo's schema.
    `min_size`/`max_size`: the connection pool's bounds. `exact_below`/`min_share`:
    when a user's vectors are searched exactly rather than through HNSW (see
    postgres_search.py)."""

    newest_schema = MIGRATIONS[-1].version

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
        super().__init__(clock)
        self.url = connection_url(url)
        self._min_size = min_size
        self._max_size = max_size
        self.search = Search(self.url, exact_below, min_share)
        self._pool: AsyncConnectionPool | None = None
        # on a Citus coordinator, the nodes holding shards with synchronous_commit off, as
        # found at open: a shard moved off one can lose acknowledged writes (warned of then)
        self.async_commit_nodes: list[str] = []

    @property
    def exact_below(self) -> int:
        return self.search.exact_below

    async def build_vector_index(self, dims: int) -> bool:
        return await self.search.build_vector_index(dims)

    # -- the executor --------------------------------------------------------------------------

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
            conn.execute(RECORDS.format(time="timestamptz"))
            applied = {r[0] for r in conn.execute(APPLIED)}
            for migration in pending(applied, MIGRATIONS):
                with conn.transaction(), conn.cursor() as cur:
                    migration.apply(cur)
                    cur.execute(as_format(RECORD), (migration.version, migration.name, utcnow()))
                applied.add(migration.version)
            if CITUS_MIGRATION in applied:  # a database made a Citus coordinator since: distributed now
                with conn.transaction(), conn.cursor() as cur:
                    distribute(cur)
            conn.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_NAMESPACE,))
            with conn.cursor() as cur:
                self.async_commit_nodes = async_commit_nodes(cur)
            if self.async_commit_nodes:
                log.warning(
                    "synchronous_commit is off on %s: writes acknowledged while Citus moves a shard"
                    " off such a node can be lost; rebalance with mnemo stopped, or turn it on"
                    " first (docs/scaling.md, 'Adding a worker')",
                    ", ".join(self.async_commit_nodes),
                )

    async def close(self) -> None:
        await self.search.close()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def schema_versions(self) -> list[int]:
        async def select(tx: PgTx) -> list[int]:
            return [r[0] for r in await tx.all(APPLIED)]

        return await self._read(None, select)

    @asynccontextmanager
    async def _tx(self, user_id: str | None = None) -> AsyncIterator[PgTx]:
        """One transaction; with `user_id`, row-level security lets it see that user's rows only."""
        if self._pool is None:
            raise RuntimeError("the store is not open")
        try:
            async with self._pool.connection() as conn:
                async with conn.transaction(), conn.cursor() as cur:
                    tx = PgTx(cur)
                    if user_id is not None:
                        await tx.enter(user_id)
                    yield tx
                for then in tx.committed:
                    then()
        except psycopg.errors.DiskFull as exc:
            raise StorageFull("the database's disk is full: nothing was stored") from exc

    async def _read(self, user_id: str | None, fn: TxFn[PgTx, P, T], *args: P.args, **kw: P.kwargs) -> T:
        async with self._tx(user_id) as tx:
            return await fn(tx, *args, **kw)

    _write = _read  # every transaction may write

    # -- search ----------------------------------------------------------------------------------

    async def _nearest(
        self, tx: PgTx, scope: Scope, vector: np.ndarray, model: str, k: int
    ) -> list[ScoredFact]:
        return await self.search.nearest(tx, scope, vector, model, k) if k > 0 else []

    async def _lexical(self, tx: PgTx, scope: Scope, query: str, k: int) -> list[ScoredFact]:
        words = query_words(query)
        return await self.search.lexical(tx, scope, words, k) if words and k > 0 else []

    async def vectors(self, scope: Scope, fact_ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        if not fact_ids:
            return {}
        return await self._read(scope.user_id, self.search.vectors, scope, fact_ids, model)

    # -- commit: pipelined, and the counts that choose the vector search ----------------------------
    #
    # A batch of new facts only is written a table at a time, many rows a statement
    # (`_apply_new`). Any other batch's statements are sent without waiting for each answer: nothing
    # in a change depends on the database's answer to the one before (the chain's
    # hashes are computed here, and a vector finds its fact by id). The answers are
    # read once all are sent; a stale version is a Conflict, raised before the
    # transaction commits, so nothing of the batch is applied.

    async def _apply(
        self, tx: PgTx, user_id: str, changes: list[Change], at: datetime, prev: str
    ) -> tuple[list[Event], Counts]:
        if changes and all(c.before is None for c in changes):
            return await self._apply_new(tx, user_id, changes, at, prev)
        conn = tx.cursor.connection
        sent: list[_Sent] = []
        events: list[Event] = []
        async with conn.pipeline():
            for change in changes:
                event = audit.seal(change, user_id, at, prev)
                event_sql = facts.INSERT_EVENT + " RETURNING seq"
                sent.append(await self._send(tx, change, event_sql, audit.event_row(event)))
                events.append(event)
                prev = event.hash
        counts: Counts = {}
        for i, answers in enumerate(sent):
            seq = await self._check(answers, counts)
            assert seq is not None
            events[i] = dataclasses.replace(events[i], seq=seq)
        return events, counts

    async def _apply_new(
        self, tx: PgTx, user_id: str, changes: list[Change], at: datetime, prev: str
    ) -> tuple[list[Event], Counts]:
        """A batch of new facts only (a turn's first facts, a seeding): written as `_insert_new`
        writes them, then their events, many a statement."""
        events: list[Event] = []
        for change in changes:
            events.append(audit.seal(change, user_id, at, prev))
            prev = events[-1].hash
        counts = await self._insert_new(tx, user_id, changes)
        seq: dict[str, int] = {}
        for chunk in _chunks(events):
            await tx.cursor.execute(
                as_format(facts.insert_events(len(chunk)) + " RETURNING hash, seq"),
                [v for e in chunk for v in audit.event_row(e)],
                prepare=False,
            )
            seq.update(await tx.cursor.fetchall())
        return [dataclasses.replace(e, seq=seq[e.hash]) for e in events], counts

    async def _import(self, tx: PgTx, user_id: str, changes: list[Change], events: list[Event]) -> Counts:
        counts = await self._insert_new(tx, user_id, changes)
        for chunk in _chunks(events):
            await tx.cursor.execute(
                as_format(facts.import_events(len(chunk))),
                [v for e in chunk for v in imported_event(e)],
                prepare=False,
            )
        return counts

    @staticmethod
    async def _insert_new(tx: PgTx, user_id: str, changes: list[Change]) -> Counts:
        """New facts and their vectors, a table at a time and up to a thousand rows a statement
        (not three or four statements a fact): on Citus each statement of one user goes whole to
        the user's shard, so its planning and its trip to the worker are paid once a thousand
        facts. The vectors find their facts by the rowids the facts' statement returned. These
        statements are never prepared: each row count is a statement of its own, and a prepared
        one of a thousand rows would hold megabytes of the connection's memory for good."""
        cur = tx.cursor
        rowid: dict[str, int] = {}
        for chunk in _chunks(changes):
            await cur.execute(
                as_format(facts.insert_facts(len(chunk)) + " RETURNING id, rowid"),
                [v for c in chunk for v in facts.fact_values(tx, c.fact)],
                prepare=False,
            )
            rowid.update(await cur.fetchall())
        vectors = [
            (
                rowid[f.id],
                user_id,
                f.embedding_model,
                len(c.vector),
                _active(f),
                f.agent_id or "",
                np.asarray(c.vector, dtype=np.float32),
            )
            for c in changes
            if (f := c.fact).embedding_model is not None and c.vector is not None and not f.purged
        ]
        for chunk in _chunks(vectors):
            await cur.execute(
                "INSERT INTO fact_vectors (fact_rowid, user_id, model, dims, active, agent_key, embedding)"
                f" VALUES {', '.join(['(%s, %s, %s, %s, %s, %s, %b)'] * len(chunk))}",
                [v for row in chunk for v in row],
                prepare=False,
            )
        counts: Counts = {}
        for _, _, model, *_ in vectors:
            counts[model] = counts.get(model, 0) + 1
        return counts

    async def _send(self, tx: PgTx, change: Change, event_sql: str = "", event_row: Params = ()) -> _Sent:
        conn = tx.cursor.connection
        fact_cur = conn.cursor()
        sql, values = facts.write_fact(tx, change)
        await fact_cur.execute(as_format(sql + " RETURNING rowid"), values)
        vector = await self._send_vector(conn, change)
        event_cur = None
        if event_sql:
            event_cur = conn.cursor()
            await event_cur.execute(as_format(event_sql), event_row)
        return _Sent(change, fact_cur, event_cur, vector)

    @staticmethod
    async def _send_vector(conn: psycopg.AsyncConnection, change: Change) -> _Vector:
        """Keep the fact's vector row in step with it (the lexical index is a generated column).

        Each statement is pinned to the user and reads or writes one table (but the fact's
        rowid, found by its key), so that on Citus each is routed whole to the user's shard
        group; they are pipelined, and run in this order: `old` sees the rows as they were."""
        f = change.fact
        model = f.embedding_model or (change.before.embedding_model if change.before else None)
        if model is None:
            return _Vector()
        params: dict[str, Any] = {
            "id": f.id,
            "user": f.user_id,
            "active": _active(f),
            "agent": f.agent_id or "",
            "model": model,
        }
        if f.purged:
            removed = conn.cursor()
            await removed.execute(
                f"DELETE FROM fact_vectors WHERE user_id = %(user)s AND fact_rowid = {_ROWID} RETURNING"
                " model",
                params,
            )
            return _Vector(removed=removed)
        if change.vector is None:
            await conn.cursor().execute(
                "UPDATE fact_vectors SET active = %(active)s, agent_key = %(agent)s"
                f" WHERE user_id = %(user)s AND fact_rowid = {_ROWID}"
                " AND (active, agent_key) IS DISTINCT FROM (%(active)s, %(agent)s)",
                params,
            )
            return _Vector()
        vector = np.asarray(change.vector, dtype=np.float32)
        sent = _Vector(old=conn.cursor(), written=conn.cursor())
        assert sent.old is not None and sent.written is not None
        await sent.old.execute(
            "SELECT model FROM fact_vectors"
            f" WHERE user_id = %(user)s AND fact_rowid = {_ROWID} AND model = %(model)s",
            params,
        )
        if change.before is not None and change.before.text != f.text:
            # other models' vectors (written by `mnemo reindex`) embed the old text, so they go;
            # reindex embeds the fact again
            sent.gone = conn.cursor()
            await sent.gone.execute(
                "DELETE FROM fact_vectors"
                f" WHERE user_id = %(user)s AND fact_rowid = {_ROWID} AND model <> %(model)s"
                " RETURNING model",
                params,
            )
        await sent.written.execute(
            "INSERT INTO fact_vectors (fact_rowid, user_id, model, dims, active, agent_key, embedding)"
            " SELECT rowid, %(user)s, %(model)s, %(dims)s, %(active)s, %(agent)s, %(vector)b"
            " FROM facts WHERE user_id = %(user)s AND id = %(id)s"
            # the key is (user_id, fact_rowid, model) since migration 10, (fact_rowid, model) since
            # 5; named, so that a database not yet migrated is written to as before
            " ON CONFLICT ON CONSTRAINT fact_vectors_pkey DO UPDATE SET model = excluded.model,"
            " dims = excluded.dims,"
            " active = excluded.active, agent_key = excluded.agent_key, embedding = excluded.embedding"
            " RETURNING model",
            {**params, "dims": vector.shape[0], "vector": vector},
        )
        return sent

    @staticmethod
    async def _check(sent: _Sent, counts: Counts) -> int | None:
        """Read one change's answers: its version held, how its vectors counted; its event's seq."""
        change = sent.change
        if await sent.fact.fetchone() is None:
            raise Conflict(facts.stale(change))
        v = sent.vector
        for (model,) in await v.removed.fetchall() if v.removed is not None else []:
            counts[model] = counts.get(model, 0) - 1
        gone = await v.gone.fetchall() if v.gone is not None else []
        written = await v.written.fetchone() if v.written is not None else None
        if v.old is not None and written is not None:
            if await v.old.fetchone() is None:  # the model's first vector of this fact
                counts[written[0]] = counts.get(written[0], 0) + 1
            for (other,) in gone:
                counts[other] = counts.get(other, 0) - 1
        if sent.event is None:
            return None
        row = await sent.event.fetchone()
        return row[0] if row else None

    async def _settle(self, tx: PgTx, user_id: str, changes: list[Change], counts: Counts) -> None:
        """Move the user's counts of vectors (per model) and of active facts by this batch."""
        for model, delta in counts.items():
            if delta:
                await tx.execute(
                    "INSERT INTO vector_counts (user_id, model, n) VALUES (?, ?, ?) ON CONFLICT (user_id,"
                    " model)"
                    " DO UPDATE SET n = vector_counts.n + excluded.n",
                    (user_id, model, delta),
                )
        active = sum(_active(c.fact) - _active(c.before) for c in changes)
        if active:
            await tx.execute(
                "INSERT INTO fact_counts (user_id, active) VALUES (?, ?) ON CONFLICT (user_id)"
                " DO UPDATE SET active = fact_counts.active + excluded.active",
                (user_id, active),
            )

    # -- the job claim --------------------------------------------------------------------------------

    async def claim_job(self, worker: str, now: datetime, lease: timedelta) -> Job | None:
        """Several processes may claim at once: the users whose earliest open job is due are
        found first, without locking (mnemo_claim_candidates), the one served longest ago (or
        never: jobs.stamp_claim) first, then the oldest due; then each in
        turn is entered and its job claimed, skipping a row another transaction has locked
        (FOR UPDATE SKIP LOCKED, in mnemo_claim_job_of), so no job is handed out twice, no
        worker waits on another's, and a user's jobs are claimed one at a time, in order."""

        async def claim(tx: PgTx) -> Job | None:
            rows = await tx.all("SELECT * FROM mnemo_claim_candidates(?, ?)", (now, CLAIM_CANDIDATES))
            for user_id in dict.fromkeys(r[0] for r in rows):
                await tx.enter(user_id)
                row = await tx.one(
                    "SELECT mnemo_claim_job_of(?, ?, ?, ?)", (user_id, worker, now, now + lease)
                )
                if row is not None and row[0] is not None:
                    await jobs.stamp_claim(tx, user_id, row[0], now)
                    return await jobs.job(tx, user_id, row[0])
            return None

        return await self._write(None, claim)

    async def requeue_waiting(self, now: datetime) -> int:
        async def requeue(tx: PgTx) -> int:
            row = await tx.one("SELECT mnemo_requeue_waiting(?)", (now,))
            return int(row[0]) if row else 0

        return await self._write(None, requeue)

    # -- reindex: vectors of other models ------------------------------------------------------------

    async def add_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[Unembedded, np.ndarray]]
    ) -> int:
        async def write(tx: PgTx) -> int:
            # the person's commits first (as they take the same lock): a purge or an edit not yet
            # committed would otherwise still read as the version this vector embeds
            await tx.lock_user(user_id)
            written = 0
            for fact, vector in vectors:
                vector = np.asarray(vector, dtype=np.float32)
                written += await tx.execute(
                    "INSERT INTO fact_vectors (fact_rowid, user_id, model, dims, active, agent_key,"
                    " embedding)"
                    " SELECT rowid, ?, ?, ?, status = 'active', COALESCE(agent_id, ''), ? FROM facts"
                    " WHERE user_id = ? AND rowid = ? AND version = ? AND NOT purged"
                    " ON CONFLICT (user_id, fact_rowid, model) DO NOTHING",
                    (user_id, model, vector.shape[0], vector, user_id, fact.rowid, fact.version),
                )
            if written:
                await self._settle(tx, user_id, [], {model: written})
            return written

        return await self._write(user_id, write)

    async def drop_vectors(self, user_id: str, keep: str) -> int:
        async def write(tx: PgTx) -> int:
            dropped = await tx.execute(
                "DELETE FROM fact_vectors WHERE user_id = ? AND model <> ?", (user_id, keep)
            )
            # vector_counts is never deleted from: a model with none left counts 0
            await tx.execute(
                "UPDATE vector_counts SET n = 0 WHERE user_id = ? AND model <> ? AND n <> 0", (user_id, keep)
            )
            return dropped

        return await self._write(user_id, write)


def _chunks(rows: Sequence[Any], size: int = 1000) -> list[Sequence[Any]]:
    """`rows` a statement at a time: a statement takes at most 65,535 parameters (a fact has 22)."""
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def _active(f: Fact | None) -> bool:
    """Whether a fact is found by search (in the counts and the vector filters)."""
    return f is not None and f.status == Status.ACTIVE and not f.purged
