"""The embedded default store: one SQLite file, WAL, FTS5, and an in-memory vector cache.

The driver is `sqlean` (a drop-in `sqlite3` with a current SQLite and FTS5,
whatever the Python build ships). All calls run on one connection under a lock,
off the event loop. Vectors: see `store/vectors.py` for why they are searched
in memory rather than through a vector extension.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import sqlean

from .. import audit
from ..domain import (
    BackfillMark,
    Change,
    Claim,
    Conflict,
    Duplicate,
    Event,
    Fact,
    NotFound,
    Scope,
    Status,
    StorageFull,
    readable_agent_keys,
    utcnow,
)
from . import batch
from .base import ScoredFact
from .fulltext import COMMON_TERM_SHARE, SMALL_STORE, owner_token, query_words
from .migrate import pending
from .migrations.sqlite import MIGRATIONS
from .private_files import private_database
from .sqlite_backfill import BackfillMixin
from .sqlite_events import redact_events
from .sqlite_jobs import JobsMixin
from .sqlite_people import PeopleMixin
from .sqlite_reindex import ReindexMixin
from .sqlite_rows import (
    AGENT_COLUMNS,
    EVENT_COLUMNS,
    agent_from,
    event_from,
    fact_from,
    readable,
    ts,
)
from .sqlite_transfer import TransferMixin
from .vectors import Columns, Row, VectorCache

T = TypeVar("T")
log = logging.getLogger(__name__)
_SQLITE_FULL = 13  # "database or disk is full"

_FACT_COLUMNS = (
    "rowid, id, user_id, agent_id, text, category, status, confidence, created_at, recorded_at,"
    " retired_at, valid_from, valid_to, supersedes, superseded_by, version, source,"
    " embedding_model, pinned, mentions, last_seen_at, purged"
)
_FACT_SELECT = ", ".join(f"f.{c.strip()}" for c in _FACT_COLUMNS.split(","))
_WRITE_COLUMNS = (
    "id, user_id, agent_id, text, text_hash, category, status, confidence, created_at,"
    " recorded_at, retired_at, valid_from, valid_to, supersedes, superseded_by, version, source,"
    " embedding_model, pinned, mentions, last_seen_at, purged"
)


class SQLiteStore(PeopleMixin, JobsMixin, BackfillMixin, TransferMixin, ReindexMixin):
    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], datetime] = utcnow,
        vector_cache: VectorCache | None = None,
    ) -> None:
        self.path = str(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: Any = None
        self._cache = vector_cache or VectorCache()

    # -- plumbing -------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    return fn(*args)
                except sqlean.OperationalError as exc:
                    if getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
                        raise StorageFull("the database's disk is full: nothing was stored") from exc
                    raise

        return await asyncio.to_thread(locked)

    def _tx(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(cursor, ...)` in one immediate (write-locking) transaction."""
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            result = fn(cur, *args)
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error): then the error
            # is what the caller must hear, not that there was nothing left to roll back
            if self._conn.in_transaction:
                cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")
        return result

    async def open(self) -> None:
        await self._run(self._open)

    def _open(self) -> None:
        if self.path != ":memory:":
            private_database(Path(self.path))
        conn = sqlean.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 5000")
        # erased text must not linger in free pages or in the full-text index's old segments
        conn.execute("PRAGMA secure_delete = ON")
        self._conn = conn
        # a scratch index that tokenizes query words exactly as facts_fts does
        conn.execute("CREATE VIRTUAL TABLE temp.query_terms USING fts5 (text, tokenize = 'porter unicode61')")
        conn.execute(
            "CREATE VIRTUAL TABLE temp.query_terms_vocab USING fts5vocab (temp, query_terms, instance)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for migration in pending(applied, MIGRATIONS):

            def apply(cur, m=migration):
                m.apply(cur)
                cur.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (m.version, m.name, ts(utcnow())),
                )

            self._tx(apply)

    async def close(self) -> None:
        if self._conn is not None:
            await self._run(self._conn.close)
            self._conn = None

    def schema_versions(self) -> list[int]:
        return [r[0] for r in self._conn.execute("SELECT version FROM schema_migrations")]

    # -- visibility ------------------------------------------------------------

    def _agent_keys(self, scope: Scope) -> list[str] | None:
        if scope.all_agents:
            return None
        rows = self._conn.execute(
            f"SELECT {AGENT_COLUMNS} FROM agents WHERE user_id = ? AND deleted_at IS NULL",
            (scope.user_id,),
        )
        return readable_agent_keys(scope, [agent_from(r) for r in rows])

    def _visible(self, scope: Scope, *, by_key: bool = False) -> tuple[str, list[Any]]:
        """The WHERE clause of the agent rule. With `by_key`, the caller's own condition
        names rows by key, and the unary plus stops SQLite from scanning the user's
        index instead of looking those rows up."""
        keys = self._agent_keys(scope)
        user = "+f.user_id" if by_key else "f.user_id"
        if keys is None:
            return f"{user} = ?", [scope.user_id]
        marks = ", ".join("?" * len(keys))
        return f"{user} = ? AND COALESCE(f.agent_id, '') IN ({marks})", [scope.user_id, *keys]

    # -- facts: reads ----------------------------------------------------------

    def _select_rows(
        self, scope: Scope, where: str, params: Sequence[Any], tail: str = "", *, by_key: bool = False
    ) -> list[tuple[int, Fact]]:
        visible, vparams = self._visible(scope, by_key=by_key)
        sql = f"SELECT {_FACT_SELECT} FROM facts f WHERE {visible} AND ({where}) {tail}"
        rows = self._conn.execute(sql, (*vparams, *params))
        return [(r[0], fact) for r, fact in readable(rows, fact_from, "memory", 1)]

    def _select(
        self, scope: Scope, where: str, params: Sequence[Any], tail: str = "", *, by_key: bool = False
    ) -> list[Fact]:
        return [fact for _, fact in self._select_rows(scope, where, params, tail, by_key=by_key)]

    async def get_fact(self, scope: Scope, fact_id: str) -> Fact:
        found = await self._run(functools.partial(self._select, scope, "f.id = ?", (fact_id,), by_key=True))
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
        where, params = "1", []
        if statuses:
            where = f"f.status IN ({', '.join('?' * len(statuses))})"
            params = [str(s) for s in statuses]
        tail = "ORDER BY f.created_at DESC, f.rowid DESC LIMIT ? OFFSET ?"
        return await self._run(self._select, scope, where, [*params, limit, offset], tail)

    async def find_by_hash(
        self, scope: Scope, text_hash: str, *, statuses: Sequence[Status] = (Status.ACTIVE,)
    ) -> list[Fact]:
        marks = ", ".join("?" * len(statuses))
        return await self._run(
            self._select,
            scope,
            f"f.text_hash = ? AND f.status IN ({marks})",
            (text_hash, *map(str, statuses)),
            "ORDER BY f.rowid",
        )

    async def recent(self, scope: Scope, since: datetime, k: int) -> list[Fact]:
        return await self._run(
            self._select,
            scope,
            "f.status = 'active' AND f.last_seen_at >= ?",
            (ts(since),),
            "ORDER BY f.last_seen_at DESC LIMIT " + str(int(k)),
        )

    async def pinned(self, scope: Scope) -> list[Fact]:
        return await self._run(
            self._select, scope, "f.pinned = 1 AND f.status = 'active'", (), "ORDER BY f.created_at"
        )

    async def nearest(self, scope: Scope, vector: np.ndarray, model: str, k: int) -> list[ScoredFact]:
        return await self._run(self._nearest, scope, vector, model, k)

    def _generation(self, user_id: str) -> int:
        row = self._conn.execute(
            "SELECT generation FROM vector_generations WHERE user_id = ?", (user_id,)
        ).fetchone()
        return row[0] if row else 0

    def _load_vectors(self, user_id: str, model: str) -> Columns:
        rows = self._conn.execute(
            "SELECT v.fact_rowid, v.embedding, f.status = 'active' AND f.purged = 0,"
            " COALESCE(f.agent_id, '') FROM fact_vectors v JOIN facts f ON f.rowid = v.fact_rowid"
            " WHERE v.user_id = ? AND v.model = ?",
            (user_id, model),
        ).fetchall()
        if not rows:
            return Columns()
        rowids, vectors, active, agents = (list(c) for c in zip(*rows, strict=True))
        return Columns(rowids, vectors, [bool(a) for a in active], agents)

    def _nearest(self, scope: Scope, vector: np.ndarray, model: str, k: int) -> list[ScoredFact]:
        found = self._cache.search(
            (scope.user_id, model),
            self._generation(scope.user_id),
            lambda: self._load_vectors(scope.user_id, model),
            vector,
            k,
            self._agent_keys(scope),
        )
        if not found:
            return []
        similarity = dict(found)
        marks = ", ".join("?" * len(found))
        by_rowid = dict(self._select_rows(scope, f"f.rowid IN ({marks})", list(similarity), by_key=True))
        return [ScoredFact(by_rowid[rid], sim) for rid, sim in found if rid in by_rowid]

    def _discriminative(self, words: list[str]) -> list[str]:
        """The query words worth a full-text search: common ones dropped on a large store.

        Document frequencies come from the index's own vocabulary, so the query
        words are first put through the same (Porter) tokenizer.
        """
        total = self._conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]
        if total < SMALL_STORE or not words:
            return words
        self._conn.executemany(
            "INSERT INTO temp.query_terms (rowid, text) VALUES (?, ?)", list(enumerate(words))
        )
        stems: dict[str, list[str]] = {}
        for term, row in self._conn.execute("SELECT term, doc FROM temp.query_terms_vocab"):
            stems.setdefault(term, []).append(words[row])
        self._conn.execute("DELETE FROM temp.query_terms")
        marks = ", ".join("?" * len(stems))
        df = dict(
            self._conn.execute(
                f"SELECT term, doc FROM facts_fts_vocab WHERE term IN ({marks})", list(stems)
            ).fetchall()
        )
        limit = COMMON_TERM_SHARE * total
        return [w for term, ws in stems.items() if df.get(term, 0) <= limit for w in ws]

    async def lexical(self, scope: Scope, query: str, k: int) -> list[ScoredFact]:
        words = query_words(query)
        if not words or k <= 0:
            return []

        def search():
            kept = self._discriminative(words)
            if not kept:
                return []
            match = " OR ".join(f'"{w}"' for w in kept)
            visible, params = self._visible(scope)
            sql = (
                f"SELECT {_FACT_SELECT}, bm25(facts_fts, 0.0, 1.0) AS rank"
                " FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid"
                f" WHERE facts_fts MATCH ? AND {visible} AND f.status = 'active'"
                " ORDER BY rank LIMIT ?"
            )
            owner = owner_token(scope.user_id)
            rows = self._conn.execute(sql, (f"owner:{owner} AND text:({match})", *params, k))
            # bm25() is lower-is-better and negative; report a positive score
            return [ScoredFact(fact, -r[-1]) for r, fact in readable(rows, fact_from, "memory", 1)]

        return await self._run(search)

    async def vectors(self, scope: Scope, fact_ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        def select():
            out: dict[str, np.ndarray] = {}
            if not fact_ids:
                return out
            rows = self._select_rows(
                scope, f"f.id IN ({', '.join('?' * len(fact_ids))})", list(fact_ids), by_key=True
            )
            for rowid, fact in rows:
                row = self._conn.execute(
                    "SELECT embedding FROM fact_vectors WHERE fact_rowid = ? AND model = ?",
                    (rowid, model),
                ).fetchone()
                if row:
                    out[fact.id] = np.frombuffer(row[0], dtype=np.float32)
            return out

        return await self._run(select)

    # -- facts: writes ---------------------------------------------------------

    async def commit(
        self,
        user_id: str,
        changes: Sequence[Change],
        at: datetime,
        *,
        finish: tuple[Claim, dict] | None = None,
        mark: BackfillMark | None = None,
        retire: str | None = None,
    ) -> list[Event]:
        if not changes and finish is None and mark is None and retire is None:
            return []
        return await self._run(self._commit_and_patch, user_id, list(changes), at, finish, mark, retire)

    def _commit_and_patch(
        self,
        user_id: str,
        changes: list[Change],
        at: datetime,
        finish: tuple[Claim, dict] | None,
        mark: BackfillMark | None,
        retire: str | None,
    ) -> list[Event]:
        cache_rows: dict[str, list[Row]] = {}
        events, generation = self._tx(self._commit, user_id, changes, at, cache_rows, finish, mark, retire)
        for model, rows in cache_rows.items():
            self._cache.apply((user_id, model), generation - 1, generation, rows)
        if any(c.redact for c in changes):
            self._checkpoint()
        return events

    def _checkpoint(self) -> None:
        """After a purge: copy the write-ahead log into the database and empty it, so that the
        erased text's old pages leave the log file (secure_delete has zeroed them in the
        database). A reader in another process can hold the log back; then the next
        checkpoint takes it."""
        busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            log.warning("the log still holds a purged text's old pages: another process is reading")

    def _commit(
        self,
        cur,
        user_id: str,
        changes: list[Change],
        at: datetime,
        cache_rows: dict[str, list[Row]],
        finish: tuple[Claim, dict] | None,
        mark: BackfillMark | None,
        retire: str | None,
    ) -> tuple[list[Event], int]:
        batch.check(user_id, changes)
        if finish is not None:
            claim, result = finish
            self._finish_job(cur, claim, {**result, "events": len(changes)}, self._clock())
        if mark is not None:
            self._advance_mark(cur, user_id, mark, self._clock())
        for change in changes:  # first, as they may seal the log again (see mnemo.audit)
            if change.redact:
                redact_events(cur, user_id, change.fact.id)
        row = cur.execute(
            "SELECT hash FROM fact_events WHERE user_id = ? ORDER BY seq DESC LIMIT 1", (user_id,)
        ).fetchone()
        prev = row[0] if row else audit.GENESIS
        events = []
        for change in changes:
            rowid = self._write_fact(cur, change)
            indexed = self._index(cur, rowid, change)
            if indexed is not None:
                cache_rows.setdefault(indexed[0], []).append(indexed[1])
            event = audit.seal(change, user_id, at, prev)
            cur.execute(
                "INSERT INTO fact_events"
                " (at, user_id, fact_id, action, actor, reason, before, after, digest, prev_hash, hash, salt)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                audit.event_row(event),
            )
            events.append(dataclasses.replace(event, seq=cur.lastrowid))
            prev = event.hash
        self._check_unique(cur, user_id, changes)
        self._check_agents(cur, user_id, changes)
        if retire is not None:
            self._retire_agent(cur, user_id, retire)
        generation = self._generation(user_id)
        if cache_rows:
            generation += 1
            cur.execute(
                "INSERT INTO vector_generations VALUES (?, ?)"
                " ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation",
                (user_id, generation),
            )
        return events, generation

    def _check_unique(self, cur, user_id: str, changes: list[Change]) -> None:
        """Duplicate when the batch left two facts of one agent with the same text and status;
        BEGIN IMMEDIATE makes every writer wait for this one, so none can slip in between."""
        ours = {c.fact.id for c in changes}
        for agent, text_hash, status in batch.unique_keys(changes):
            twins = [
                r[0]
                for r in cur.execute(
                    "SELECT id FROM facts WHERE user_id = ? AND text_hash = ? AND status = ?"
                    " AND COALESCE(agent_id, '') = ? ORDER BY rowid",
                    (user_id, text_hash, status, agent),
                )
            ]
            if len(twins) > 1:
                other = next((i for i in twins if i not in ours), twins[0])
                raise Duplicate(f"memory {other} already says this", other)

    def _check_agents(self, cur, user_id: str, changes: list[Change]) -> None:
        for agent_id in batch.living_agents(changes):
            self._agent_row(cur, user_id, agent_id)  # NotFound for a deleted (or another's) agent

    def _retire_agent(self, cur, user_id: str, agent_id: str) -> None:
        self._agent_row(cur, user_id, agent_id)
        left = cur.execute(
            "SELECT id FROM facts WHERE user_id = ? AND agent_id = ? AND status IN ('active', 'candidate')"
            " LIMIT 1",
            (user_id, agent_id),
        ).fetchone()
        if left is not None:
            raise Conflict(f"agent {agent_id} gained memory {left[0]} meanwhile")
        cur.execute(
            "UPDATE agents SET deleted_at = ? WHERE id = ? AND user_id = ?",
            (ts(self._clock()), agent_id, user_id),
        )

    def _write_fact(self, cur, change: Change) -> int:
        f = change.fact
        values = (
            f.id,
            f.user_id,
            f.agent_id,
            f.text,
            None if f.purged else f.text_hash,
            str(f.category),
            str(f.status),
            f.confidence,
            ts(f.created_at),
            ts(f.recorded_at),
            ts(f.retired_at),
            ts(f.valid_from),
            ts(f.valid_to),
            f.supersedes,
            f.superseded_by,
            f.version,
            json.dumps(f.source.to_json()),
            f.embedding_model,
            int(f.pinned),
            f.mentions,
            ts(f.last_seen_at),
            int(f.purged),
        )
        columns = _WRITE_COLUMNS
        if change.before is None:
            cur.execute(f"INSERT INTO facts ({columns}) VALUES ({', '.join('?' * len(values))})", values)
            return cur.lastrowid
        assignments = ", ".join(f"{c.strip()} = ?" for c in columns.split(","))
        cur.execute(
            f"UPDATE facts SET {assignments} WHERE id = ? AND user_id = ? AND version = ?",
            (*values, f.id, f.user_id, change.before.version),
        )
        if cur.rowcount != 1:
            raise Conflict(f"memory {f.id} changed since version {change.before.version}")
        return cur.execute("SELECT rowid FROM facts WHERE id = ?", (f.id,)).fetchone()[0]

    def _index(self, cur, rowid: int, change: Change) -> tuple[str, Row] | None:
        """Keep the lexical index and the vectors in step with the fact row.

        Returns the vector-cache change (model, row) this fact needs, if any.
        """
        f = change.fact
        active = f.status == Status.ACTIVE and not f.purged
        cur.execute("DELETE FROM facts_fts WHERE rowid = ?", (rowid,))
        if active:
            cur.execute(
                "INSERT INTO facts_fts (rowid, owner, text) VALUES (?, ?, ?)",
                (rowid, owner_token(f.user_id), f.text),
            )
        model = f.embedding_model or (change.before.embedding_model if change.before else None)
        if model is None:
            return None
        agent = f.agent_id or ""
        if f.purged:
            cur.execute("DELETE FROM fact_vectors WHERE fact_rowid = ?", (rowid,))
            return model, Row(rowid, None, False, agent, drop=True)
        if change.vector is not None:
            vector = np.asarray(change.vector, dtype=np.float32)
            if change.before is not None and change.before.text != f.text:
                # other models' vectors (written by `mnemo reindex`) embed the old text
                cur.execute("DELETE FROM fact_vectors WHERE fact_rowid = ? AND model != ?", (rowid, model))
            cur.execute(
                "INSERT INTO fact_vectors (fact_rowid, user_id, model, embedding) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (fact_rowid, model) DO UPDATE SET embedding = excluded.embedding",
                (rowid, f.user_id, model, vector.tobytes()),
            )
            return model, Row(rowid, vector, active, agent)
        return model, Row(rowid, None, active, agent)

    async def events(
        self, user_id: str, *, fact_id: str | None = None, until: datetime | None = None
    ) -> list[Event]:
        def select():
            sql = f"SELECT {EVENT_COLUMNS} FROM fact_events WHERE user_id = ?"
            params: list[Any] = [user_id]
            if fact_id is not None:
                sql += " AND fact_id = ?"
                params.append(fact_id)
            rows = self._conn.execute(sql + " ORDER BY seq", params).fetchall()
            events = [e for _, e in readable(rows, event_from, "event", 0)]
            return [e for e in events if until is None or e.at <= until]

        return await self._run(select)
