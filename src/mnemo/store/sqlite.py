"""The embedded default store: one SQLite file, WAL, FTS5, and an in-memory vector cache.

The driver is `sqlean` (a drop-in `sqlite3` with a current SQLite and FTS5,
whatever the Python build ships). Every call runs on one connection under a
lock, off the event loop: the shared SQL of a whole store call runs there in
one go (see sql/tx.py). Vectors: see `store/vectors.py` for why they are
searched in memory rather than through a vector extension.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import sqlean

from .. import audit
from ..domain import Change, Conflict, Event, Job, Scope, Status, StorageFull, utcnow
from .base import ScoredFact, Unembedded
from .fulltext import owner_token, query_words
from .migrate import APPLIED, RECORD, RECORDS, Migration, pending
from .migrations.sqlite import MIGRATIONS
from .private_files import private_database
from .rows import FACT_COLUMNS, fact_from, readable, ts
from .sql import facts, jobs
from .sql.store import P, SQLStore, T, TxFn
from .sql.transfer import imported_event
from .sql.tx import Row as SQLRow
from .sql.tx import SyncTx, marks, run_sync
from .sqlite_checkpoint import Checkpointer
from .sqlite_terms import SCRATCH, TermStats
from .vectors import Columns, Row, VectorCache

log = logging.getLogger(__name__)
_SQLITE_FULL = 13  # "database or disk is full"
BUSY_TIMEOUT_MS = 5000
CHECKPOINT_WAIT = 0.5  # seconds an erasure's checkpoint waits for another process's readers
CHECKPOINT_RETRY = 1.0  # seconds before a held-back checkpoint is tried again
# times are written as fixed-width UTC text, so that text order is time order (rows.ts)
sqlean.register_adapter(datetime, ts)

CacheRows = dict[str, list[Row]]  # per model: the rows of the vector cache a commit changed
Pending = tuple[CacheRows, int]  # and the user's vector generation before it


class SQLiteTx(SyncTx):
    """A transaction on the store's one connection: one writer at a time, nobody to enter."""

    true = "1"

    def json(self, value: Any) -> Any:
        return json.dumps(value)

    def json_has(self, array: str, value: str) -> str:
        return f"EXISTS (SELECT 1 FROM json_each({array}) e WHERE e.value = {value})"

    def json_text(self, document: str, key: str) -> str:
        return f"json_extract({document}, '$.{key}')"

    async def words_of(self, user_id: str, words: Sequence[str]) -> int | None:
        """The row of messages_fts that holds the words: a message names it (its own rowid may
        change in a VACUUM), and a trigger deletes it once the message is deleted or names
        another (migration 22)."""
        if not words:
            return None
        return int(
            self.cursor.execute("INSERT INTO messages_fts (words) VALUES (?)", (" ".join(words),)).lastrowid
        )

    async def drop_words(self, value: Any) -> None:
        if value is not None:
            await self.execute("DELETE FROM messages_fts WHERE rowid = ?", (value,))

    async def messages_with_words(
        self, user_id: str, phrases: Sequence[Sequence[str]], after: Any, limit: int
    ) -> list[SQLRow]:
        """By the row of messages_fts, in its order: the index walks its own rows (the terms
        are the person's own), a page at a time."""
        match = " OR ".join('"' + " ".join(p) + '"' for p in phrases)
        return await self.all(
            "SELECT messages_fts.rowid, m.created_at, m.conversation_id, m.id, m.content FROM messages_fts"
            " JOIN messages m ON m.user_id = ? AND m.words = messages_fts.rowid"
            " WHERE messages_fts MATCH ? AND messages_fts.rowid > ? AND m.erased_at IS NULL"
            " ORDER BY messages_fts.rowid LIMIT ?",
            (user_id, match, after or 0, limit),
        )

    async def enter(self, user_id: str) -> None:
        """Nothing to enter: one process's own file, no row-level security; every statement
        names its user itself."""

    async def lock_user(self, user_id: str) -> None:
        pass  # BEGIN IMMEDIATE holds every other writer off already

    async def user_named(self, name: str) -> str | None:
        row = await self.one("SELECT id FROM users WHERE name = ?", (name,))
        return row[0] if row else None

    async def key_owner(self, key_id: str) -> str | None:
        row = await self.one("SELECT user_id FROM api_keys WHERE id = ?", (key_id,))
        return row[0] if row else None

    async def claimant(self, job_id: str, worker: str) -> str | None:
        row = await self.one(
            "SELECT user_id FROM jobs WHERE id = ? AND status = 'claimed' AND claimed_by = ?",
            (job_id, worker),
        )
        return row[0] if row else None

    async def any_user(self) -> bool:
        return await self.one("SELECT 1 FROM users LIMIT 1") is not None

    async def users_with(self, table: str) -> list[str]:
        return [r[0] for r in await self.all(f"SELECT DISTINCT user_id FROM {table}")]

    async def user_ids(self) -> list[str]:
        return [r[0] for r in await self.all("SELECT id FROM users ORDER BY name")]

    async def job_counts(self) -> list[tuple[str, int]]:
        rows = await self.all("SELECT status, count(*) FROM jobs GROUP BY status")
        return [(r[0], int(r[1])) for r in rows]


class SQLiteStore(SQLStore[SQLiteTx, Pending]):
    newest_schema = MIGRATIONS[-1].version

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], datetime] = utcnow,
        vector_cache: VectorCache | None = None,
    ) -> None:
        super().__init__(clock)
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._cache = vector_cache or VectorCache()
        self._terms = TermStats()
        self._lingering = False  # an erased text's old pages may still be in the -wal file
        self._next_try = 0.0  # when (time.monotonic) the checkpoint is tried again
        self._checkpointer: Checkpointer | None = None  # the log's checkpoints, off the request path

    # -- the executor --------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    if self._lingering and time.monotonic() >= self._next_try:
                        self._checkpoint()
                    return fn(*args)
                except sqlean.OperationalError as exc:
                    if getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
                        raise StorageFull("the database's disk is full: nothing was stored") from exc
                    raise

        return await asyncio.to_thread(locked)

    async def _read(self, user_id: str | None, fn: TxFn[SQLiteTx, P, T], *args: P.args, **kw: P.kwargs) -> T:
        return await self._run(lambda: run_sync(fn(SQLiteTx(self._conn), *args, **kw)))

    async def _write(self, user_id: str | None, fn: TxFn[SQLiteTx, P, T], *args: P.args, **kw: P.kwargs) -> T:
        return await self._run(self._tx, lambda tx: run_sync(fn(tx, *args, **kw)))

    def _tx(self, fn: Callable[[SQLiteTx], T]) -> T:
        """Run `fn(tx)` in one immediate (write-locking) transaction; then what it left to run
        once committed."""
        tx = SQLiteTx(self._conn.cursor())
        tx.cursor.execute("BEGIN IMMEDIATE")
        try:
            result = fn(tx)
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error): then the error
            # is what the caller must hear, not that there was nothing left to roll back
            if self._conn.in_transaction:
                tx.cursor.execute("ROLLBACK")
            raise
        tx.cursor.execute("COMMIT")
        for then in tx.committed:
            then()
        return result

    async def open(self) -> None:
        await self._run(self._open)
        if self.path != ":memory:":
            self._checkpointer = Checkpointer(self.path)
            self._checkpointer.start()

    def _open(self) -> None:
        if self.path != ":memory:":
            private_database(Path(self.path))
        self._conn = self._connect()
        self._conn.execute(RECORDS.format(time="TEXT"))
        applied = {row[0] for row in self._conn.execute(APPLIED)}
        todo = pending(applied, MIGRATIONS)
        for migration in todo:

            def apply(tx: SQLiteTx, m: Migration = migration) -> None:
                m.apply(tx.cursor)
                tx.cursor.execute(RECORD, (m.version, m.name, utcnow()))

            self._tx(apply)
        if todo and self.path != ":memory:":
            # a connection that ran migration 10's table rebuilds wrote every row afterwards at
            # half the speed (bench/store_ops.py); a new one on the migrated file does not
            self._conn.close()
            self._conn = self._connect()

    def _connect(self) -> Any:
        conn = sqlean.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the Checkpointer's thread does it
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # erased text must not linger in free pages or in the full-text index's old segments
        conn.execute("PRAGMA secure_delete = ON")
        for statement in SCRATCH:  # a scratch index that tokenizes query words as facts_fts does
            conn.execute(statement)
        return conn

    async def close(self) -> None:
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.stop)
            self._checkpointer = None
        if self._conn is not None:
            if self._lingering:  # a last try: another process may have let go meanwhile
                await self._run(self._checkpoint)
            await self._run(self._conn.close)
            self._conn = None

    async def schema_versions(self) -> list[int]:
        def select() -> list[int]:
            return [r[0] for r in self._conn.execute(APPLIED)]

        return await self._run(select)

    # -- search ------------------------------------------------------------------------------------

    def _generation(self, user_id: str) -> int:
        row = self._conn.execute(
            "SELECT generation FROM vector_generations WHERE user_id = ?", (user_id,)
        ).fetchone()
        return row[0] if row else 0

    def _load_vectors(self, user_id: str, model: str) -> Columns:
        rows = self._conn.execute(
            "SELECT v.fact_rowid, v.embedding, f.status = 'active' AND NOT f.purged,"
            " COALESCE(f.agent_id, '') FROM fact_vectors v JOIN facts f ON f.rowid = v.fact_rowid"
            " WHERE v.user_id = ? AND v.model = ?",
            (user_id, model),
        ).fetchall()
        if not rows:
            return Columns()
        rowids, vectors, active, agents = (list(c) for c in zip(*rows, strict=True))
        return Columns(rowids, vectors, [bool(a) for a in active], agents)

    dense_together = True

    async def _nearest(
        self, tx: SQLiteTx, scope: Scope, vector: np.ndarray, model: str, k: int
    ) -> list[ScoredFact]:
        return (await self._nearest_many(tx, scope, np.atleast_2d(vector), model, k))[0]

    async def _nearest_many(
        self, tx: SQLiteTx, scope: Scope, vectors: np.ndarray, model: str, k: int
    ) -> list[list[ScoredFact]]:
        """One scan of the cached matrix for every vector, and one read of the facts found."""
        found = self._cache.search_many(
            (scope.user_id, model),
            self._generation(scope.user_id),
            lambda: self._load_vectors(scope.user_id, model),
            vectors,
            k,
            await facts.agent_keys(tx, scope),
        )
        wanted = list(dict.fromkeys(rid for each in found for rid, _ in each))
        if not wanted:
            return [[] for _ in found]
        rows = await facts.fact_rows(tx, scope, f"f.rowid IN ({marks(len(wanted))})", wanted)
        by_rowid = {r[0]: fact for r, fact in rows}
        return [[ScoredFact(by_rowid[rid], sim) for rid, sim in each if rid in by_rowid] for each in found]

    async def _lexical(self, tx: SQLiteTx, scope: Scope, query: str, k: int) -> list[ScoredFact]:
        words = query_words(query)
        kept = self._terms.discriminative(self._conn, words) if words and k > 0 else []
        if not kept:
            return []
        match = "text:(" + " OR ".join(f'"{w}"' for w in kept) + ")"
        if not self._terms.holds_most(self._conn, scope.user_id):
            match = f"owner:{owner_token(scope.user_id)} AND {match}"
        rule, params = await facts.visible(tx, scope)  # always the user: f.user_id = ?
        rows = await tx.all(
            f"SELECT {FACT_COLUMNS}, bm25(facts_fts, 0.0, 1.0) AS rank"
            " FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid"
            f" WHERE facts_fts MATCH ? AND {rule} AND f.status = 'active' ORDER BY rank LIMIT ?",
            (match, *params, k),
        )
        # bm25() is lower-is-better and negative; report a positive score
        return [ScoredFact(fact, -r[-1]) for r, fact in readable(rows, fact_from, "memory", 1)]

    async def _reads(
        self,
        user_id: str,
        reads: Mapping[str, Callable[[SQLiteTx], Coroutine[Any, Any, T]]],
        timed: Callable[[str, float], None],
    ) -> dict[str, T]:
        """All in one trip to the store's thread: on one connection they would run one after
        another anyway, and each trip costs a thread hand-off."""

        def run_all() -> dict[str, T]:
            out = {}
            for name, read in reads.items():
                started = time.perf_counter()
                try:
                    out[name] = run_sync(read(SQLiteTx(self._conn)))
                finally:
                    timed(name, time.perf_counter() - started)
            return out

        return await self._run(run_all)

    async def vectors(self, scope: Scope, fact_ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        async def select(tx: SQLiteTx) -> dict[str, np.ndarray]:
            rows = await facts.vector_rows(tx, scope, fact_ids, model)
            return {fact_id: np.frombuffer(blob, dtype=np.float32) for fact_id, blob in rows}

        return await self._read(scope.user_id, select)

    # -- commit: the indexes that follow the facts ---------------------------------------------------

    async def _apply(
        self, tx: SQLiteTx, user_id: str, changes: list[Change], at: datetime, prev: str
    ) -> tuple[list[Event], Pending]:
        cache_rows: CacheRows = {}
        events = []
        for change in changes:
            self._index(tx, await self._write_fact(tx, change), change, cache_rows)
            event = audit.seal(change, user_id, at, prev)
            seq = tx.cursor.execute(facts.INSERT_EVENT, audit.event_row(event)).lastrowid
            events.append(dataclasses.replace(event, seq=seq))
            prev = event.hash
        return events, (cache_rows, self._generation(user_id))

    async def _import(
        self, tx: SQLiteTx, user_id: str, changes: list[Change], events: list[Event]
    ) -> Pending:
        cache_rows: CacheRows = {}
        for change in changes:
            self._index(tx, await self._write_fact(tx, change), change, cache_rows)
        await tx.many(facts.IMPORT_EVENT, [imported_event(e) for e in events])
        return cache_rows, self._generation(user_id)

    async def _settle(self, tx: SQLiteTx, user_id: str, changes: list[Change], pending: Pending) -> None:
        cache_rows, generation = pending
        if cache_rows:  # other processes' caches of this user's vectors reload (see vectors.py)
            await tx.execute(
                "INSERT INTO vector_generations (user_id, generation) VALUES (?, ?)"
                " ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation",
                (user_id, generation + 1),
            )

    def _committed(self, user_id: str, changes: list[Change], pending: Pending, erased: bool) -> None:
        super()._committed(user_id, changes, pending, erased)
        cache_rows, generation = pending
        for model, rows in cache_rows.items():
            self._cache.apply((user_id, model), generation, generation + 1, rows)
        if erased:
            self._checkpoint()

    def _checkpoint(self) -> None:
        """After an erasure: copy the write-ahead log into the database and empty it, so that
        the erased text's old pages leave the log file (secure_delete has zeroed them in the
        database). A reader in another process can hold the log back (it waits at most
        CHECKPOINT_WAIT for it): then `lingering` says so, and the store tries again at its
        next call once CHECKPOINT_RETRY has passed, until the log is emptied."""
        self._conn.execute(f"PRAGMA busy_timeout = {int(CHECKPOINT_WAIT * 1000)}")
        try:
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if busy:
            if not self._lingering:
                log.warning(
                    "the write-ahead log %s-wal still holds an erased text's old pages: another process"
                    " is reading the database; tried again at the next call",
                    self.path,
                )
            self._next_try = time.monotonic() + CHECKPOINT_RETRY
        elif self._lingering:
            log.info("the write-ahead log %s-wal is emptied: the erased text has left it", self.path)
        self._lingering = bool(busy)

    async def lingering(self) -> str | None:
        """Why an erased text may still be in the database's files, while it may."""
        if not self._lingering:
            return None
        return (
            f"another process is reading the database, so the erased text's old pages are still in its"
            f" write-ahead log ({Path(self.path).name}-wal); it is emptied as soon as that reader lets go"
            " (mnemo tries again at its next use of the database)"
        )

    @staticmethod
    async def _write_fact(tx: SQLiteTx, change: Change) -> int:
        """The fact row's rowid, once written."""
        written = tx.cursor.execute(*facts.write_fact(tx, change))
        if change.before is None:
            return int(written.lastrowid)
        if written.rowcount != 1:
            raise Conflict(facts.stale(change))
        row = await tx.one(
            "SELECT rowid FROM facts WHERE user_id = ? AND id = ?", (change.fact.user_id, change.fact.id)
        )
        assert row is not None
        return int(row[0])

    @staticmethod
    def _index(tx: SQLiteTx, rowid: int, change: Change, cache_rows: CacheRows) -> None:
        """Keep the lexical index and the vectors in step with the fact row, and note the change
        the vector cache needs."""
        cur, f = tx.cursor, change.fact
        active = f.status == Status.ACTIVE and not f.purged
        cur.execute("DELETE FROM facts_fts WHERE rowid = ?", (rowid,))
        if active:
            cur.execute(
                "INSERT INTO facts_fts (rowid, owner, text) VALUES (?, ?, ?)",
                (rowid, owner_token(f.user_id), f.text),
            )
        model = f.embedding_model or (change.before.embedding_model if change.before else None)
        if model is None:
            return
        agent = f.agent_id or ""
        if f.purged:
            cur.execute("DELETE FROM fact_vectors WHERE user_id = ? AND fact_rowid = ?", (f.user_id, rowid))
            row = Row(rowid, None, False, agent, drop=True)
        elif change.vector is not None:
            vector = np.asarray(change.vector, dtype=np.float32)
            if change.before is not None and change.before.text != f.text:
                # other models' vectors (written by `mnemo reindex`) embed the old text
                cur.execute(
                    "DELETE FROM fact_vectors WHERE user_id = ? AND fact_rowid = ? AND model != ?",
                    (f.user_id, rowid, model),
                )
            cur.execute(
                "INSERT INTO fact_vectors (fact_rowid, user_id, model, embedding) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (user_id, fact_rowid, model) DO UPDATE SET embedding = excluded.embedding",
                (rowid, f.user_id, model, vector.tobytes()),
            )
            row = Row(rowid, vector, active, agent)
        else:
            row = Row(rowid, None, active, agent)
        cache_rows.setdefault(model, []).append(row)

    # -- the job claim -------------------------------------------------------------------------------

    async def claim_job(self, worker: str, now: datetime, lease: timedelta) -> Job | None:
        async def claim(tx: SQLiteTx) -> Job | None:
            row = await tx.one(
                "SELECT d.id, d.user_id FROM jobs d"
                " WHERE ((d.status IN ('pending', 'over_budget') AND d.next_attempt_at <= ?)"
                " OR (d.status = 'claimed' AND d.lease_until < ?)) AND NOT EXISTS (SELECT 1 FROM jobs e"
                " WHERE e.user_id = d.user_id AND e.id < d.id AND (e.status IN ('pending', 'claimed')"
                " OR (e.status = 'over_budget' AND e.next_attempt_at <= ?)))"
                " ORDER BY d.user_claimed_at NULLS FIRST, d.next_attempt_at, d.id LIMIT 1",
                (now, now, now),
            )
            if row is None:
                return None
            await tx.execute(
                "UPDATE jobs SET status = 'claimed', claimed_by = ?, lease_until = ?,"
                " attempts = attempts + 1 WHERE user_id = ? AND id = ?",
                (worker, now + lease, row[1], row[0]),
            )
            await jobs.stamp_claim(tx, row[1], row[0], now)
            return await jobs.job(tx, row[1], row[0])

        return await self._write(None, claim)

    async def requeue_waiting(self, now: datetime) -> int:
        async def requeue(tx: SQLiteTx) -> int:
            return await tx.execute(
                "UPDATE jobs SET status = 'pending', next_attempt_at = ?, finished_at = NULL"
                " WHERE status = 'waiting'",
                (now,),
            )

        return await self._write(None, requeue)

    # -- reindex: vectors of other models ------------------------------------------------------------

    async def add_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[Unembedded, np.ndarray]]
    ) -> int:
        async def write(tx: SQLiteTx) -> int:
            written = 0
            for fact, vector in vectors:
                written += await tx.execute(
                    "INSERT INTO fact_vectors (fact_rowid, user_id, model, embedding)"
                    " SELECT rowid, user_id, ?, ? FROM facts"
                    " WHERE rowid = ? AND user_id = ? AND version = ? AND NOT purged"
                    " ON CONFLICT (user_id, fact_rowid, model) DO NOTHING",
                    (model, np.asarray(vector, np.float32).tobytes(), fact.rowid, user_id, fact.version),
                )
            return written

        return await self._write_vectors(user_id, write, lambda other: other != model)

    async def drop_vectors(self, user_id: str, keep: str) -> int:
        async def write(tx: SQLiteTx) -> int:
            return await tx.execute(
                "DELETE FROM fact_vectors WHERE user_id = ? AND model != ?", (user_id, keep)
            )

        return await self._write_vectors(user_id, write, lambda model: model == keep)

    async def _write_vectors(
        self, user_id: str, write: Callable[[SQLiteTx], Any], untouched: Callable[[str], bool]
    ) -> int:
        """`write` the user's vectors of some models; `untouched`: whether a model's were not."""

        async def bumped(tx: SQLiteTx) -> int:
            n: int = await write(tx)
            if n:  # other processes' caches of this user's vectors reload (see vectors.py)
                before = self._generation(user_id)
                await tx.execute(
                    "INSERT INTO vector_generations (user_id, generation) VALUES (?, 1)"
                    " ON CONFLICT (user_id) DO UPDATE SET generation = generation + 1",
                    (user_id,),
                )
                # this process's: the written models' reload, the others' stay (a second
                # embedder's vectors, filled in after each write, must not reload the first's)
                tx.after_commit(lambda: self._cache.moved_on(user_id, before, before + 1, untouched))
            return n

        return await self._write(user_id, bumped)
