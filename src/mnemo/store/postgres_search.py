"""Nearest-neighbour and full-text search in the PostgreSQL store.

Exact scan or HNSW, chosen per query from the user's count of vectors (kept
in vector_counts by every commit):

- Exact: the user's rows come from the (user_id, model) btree and are ordered
  by true cosine distance. It is exact and costs one distance per row the user
  owns — measured here, 2.4 ms for a user with 2,000 vectors in a table of
  72,000 (384-d), ~50 ms at 50,000 — so below EXACT_BELOW (20,000, about the
  10 ms recall budget) it is both fast enough and exact, however big the table.
- HNSW: one graph over everyone's vectors (a partial index per dimension).
  A walk filtered to one user finds that user's rows at the rate of their
  share of the table: k results cost about k / share visited nodes. pgvector
  0.8's iterative scan keeps walking while the user, agent and status filters
  reject rows, up to hnsw.max_scan_tuples (20,000), so filters do not starve
  the top k — but a small share makes the walk long (measured: 26 ms for a
  user owning 3% of 72,000 vectors, against 2.6 ms for one owning 70%), and a
  user owning 0.1% could come back short. Below MIN_SHARE (2%: ~50 × k
  visits) a user is therefore scanned exactly even above EXACT_BELOW: slower,
  linear in their own rows, never wrong.

The graph is built when a user first qualifies for it (see
build_vector_index), not with the first vector: a store whose users are all
small never pays for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import psycopg
from psycopg import sql

from ..domain import Scope
from .base import ScoredFact
from .fulltext import COMMON_TERM_SHARE, SMALL_STORE
from .migrations.postgres import LOCK_NAMESPACE
from .rows import FACT_COLUMNS, fact_from, readable
from .sql.facts import agent_keys, vector_rows

if TYPE_CHECKING:
    from .postgres import PgTx

EXACT_BELOW = 20_000
MIN_SHARE = 0.02
MAX_INDEXED_DIMS = 2000  # pgvector's HNSW limit for `vector`
# the HNSW walk's candidate list. pgvector's default (40) missed whole clusters of a
# user's facts: recall@10 against exact search was 0.90-0.95 on 25k real MiniLM
# embeddings; at 100 it was 0.94-0.985 from one build of the graph to the next, at 200
# 0.99 in each of four builds, for about +0.3-0.4 ms (bench/postgres.py)
EF_SEARCH_FLOOR = 200
# how long the count of everyone's vectors is kept before it is read again
TOTAL_SECONDS = 300.0

# whether the graph of a dimension is built and usable (None: there is none)
_VALID = "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)"

log = logging.getLogger(__name__)


def index_name(dims: int) -> str:
    return f"fact_vectors_hnsw_{int(dims)}"


class Search:
    """Vector and full-text search over the users' facts, and the HNSW graphs it walks.

    `url`: the owner's connection (index builds). `exact_below`/`min_share`: when a user's
    vectors are scanned exactly rather than through the graph (see above)."""

    def __init__(self, url: str, exact_below: int = EXACT_BELOW, min_share: float = MIN_SHARE) -> None:
        self.url = url
        self.exact_below = exact_below
        self.min_share = min_share
        self._valid_indexes: set[int] = set()  # dimensions whose HNSW index is ready
        self._index_builds: dict[int, asyncio.Task[bool]] = {}
        self._total: tuple[float | None, int] = (None, 0)  # (read at, how many vectors in all)

    async def close(self) -> None:
        for task in list(self._index_builds.values()):
            task.cancel()
        await asyncio.gather(*self._index_builds.values(), return_exceptions=True)

    async def use_index(self, cur: psycopg.AsyncCursor, scope: Scope, model: str, dims: int) -> bool | None:
        """True for HNSW, False for an exact scan, None when the user has no vectors of `model`."""
        await cur.execute(
            "SELECT n FROM vector_counts WHERE user_id = %s AND model = %s", (scope.user_id, model)
        )
        row = await cur.fetchone()
        if row is None or row[0] <= 0:
            return None
        mine = row[0]
        total = max(await self._vector_total(cur), mine) if mine >= self.exact_below else mine
        if dims > MAX_INDEXED_DIMS or mine < self.exact_below or mine < self.min_share * total:
            return False
        if dims in self._valid_indexes:
            return True
        await cur.execute(_VALID, (index_name(dims),))
        row = await cur.fetchone()
        if row is not None and row[0]:
            self._valid_indexes.add(dims)
            return True
        self._start_index_build(dims)
        return False  # exact until the graph is ready

    def _start_index_build(self, dims: int) -> None:
        if dims in self._index_builds:
            return
        task = asyncio.create_task(self.build_vector_index(dims))
        self._index_builds[dims] = task

        def done(t: asyncio.Task[bool]) -> None:
            if not t.cancelled() and t.exception() is not None:
                # left in _index_builds: this process does not try again
                log.warning("could not build the vector index %s: %s", index_name(dims), t.exception())
            else:
                self._index_builds.pop(dims, None)

        task.add_done_callback(done)

    async def build_vector_index(self, dims: int) -> bool:
        """Build the HNSW index for vectors of `dims`; False if another process is building it.

        Built when a user first has enough vectors to need it, not with the
        first vector: until then every user is scanned exactly, and inserting
        into a graph (about a millisecond a vector) is not worth paying. It is
        built CONCURRENTLY, as the owner (the role that ran the migrations), so
        writers carry on meanwhile; an advisory lock keeps it to one process.
        """
        if dims > MAX_INDEXED_DIMS:
            return False
        name, n = index_name(dims), int(dims)
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_NAMESPACE, -n))
            locked = await cur.fetchone()
            if not (locked and locked[0]):
                return False
            cur = await conn.execute(_VALID, (name,))
            row = await cur.fetchone()
            if row is not None and not row[0]:  # an interrupted build leaves an invalid index behind
                await conn.execute(f"DROP INDEX CONCURRENTLY {name}")
            # HNSW builds fast only while the graph fits in maintenance_work_mem
            # (about 2 kB a 384-d vector); 64 MB, the default, holds ~30,000
            await conn.execute(
                "SELECT set_config('maintenance_work_mem', '1GB', false)"
                " WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('1GB')"
            )
            await conn.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON fact_vectors"
                f" USING hnsw ((embedding::vector({n})) vector_cosine_ops) WHERE dims = {n}"
            )
            await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_NAMESPACE, -n))
        self._valid_indexes.add(n)
        return True

    async def nearest(
        self, tx: PgTx, scope: Scope, vector: np.ndarray, model: str, k: int
    ) -> list[ScoredFact]:
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        dims = int(query.shape[0])
        cur = tx.cursor
        use_index = await self.use_index(cur, scope, model, dims)
        if use_index is None:
            return []
        keys = await agent_keys(tx, scope)
        if use_index:
            # relaxed order: the walk may return rows slightly out of order;
            # the outer query sorts them. enable_sort = off keeps the planner
            # off the btree + sort plan that an exact scan would be.
            # SET LOCAL, which Citus sends on to the worker that walks the shard's graph
            await cur.execute(
                sql.SQL(
                    "SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {};"
                    " SET LOCAL enable_sort = off"
                ).format(sql.Literal(min(1000, max(EF_SEARCH_FLOOR, 2 * k))))
            )
        params = {"user": scope.user_id, "agents": keys, "query": query, "model": model, "k": k}
        await cur.execute(nearest_sql(dims, by_index=use_index, all_agents=keys is None), params)
        rows = await cur.fetchall()
        return [ScoredFact(f, 1.0 - float(r[-1])) for r, f in readable(rows, fact_from, "memory", 1)]

    async def lexical(self, tx: PgTx, scope: Scope, words: list[str], k: int) -> list[ScoredFact]:
        cur = tx.cursor
        agents = await agent_keys(tx, scope)
        # the search, then its facts: two statements, so that on Citus the function runs on the
        # coordinator (its own statement is routed to the user's shard), which a join with facts
        # would send to the worker, where it could not query a distributed table
        await cur.execute(
            "SELECT fact_rowid, score"
            " FROM mnemo_lexical(%(user)s, %(words)s, %(agents)s, %(k)s, %(share)s, %(small)s)",
            {
                "user": scope.user_id,
                "words": words,
                "agents": agents,
                "k": k,
                "share": COMMON_TERM_SHARE,
                "small": SMALL_STORE,
            },
        )
        scores: dict[int, float] = {rowid: float(score) for rowid, score in await cur.fetchall()}
        if not scores:
            return []
        await cur.execute(
            f"SELECT {FACT_COLUMNS} FROM facts f WHERE f.user_id = %(user)s AND f.rowid = ANY (%(rowids)s)",
            {"user": scope.user_id, "rowids": list(scores)},
        )
        found = sorted(
            readable(await cur.fetchall(), fact_from, "memory", 1),
            key=lambda rf: (-scores[rf[0][0]], rf[0][0]),
        )
        return [ScoredFact(f, scores[r[0]]) for r, f in found]

    async def _vector_total(self, cur: psycopg.AsyncCursor) -> int:
        """How many vectors there are in all, whoever's (mnemo_vector_total, from the counts every
        commit keeps), read at most every TOTAL_SECONDS: the share rule needs its size only."""
        read_at, total = self._total
        if read_at is None or time.monotonic() - read_at >= TOTAL_SECONDS:
            await cur.execute("SELECT mnemo_vector_total()")
            row = await cur.fetchone()
            total = int(row[0]) if row else 0
            self._total = (time.monotonic(), total)
        return total

    @staticmethod
    async def vectors(tx: PgTx, scope: Scope, fact_ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        rows = await vector_rows(tx, scope, fact_ids, model)
        return {fact_id: embedding.to_numpy() for fact_id, embedding in rows}


def nearest_sql(dims: int, *, by_index: bool, all_agents: bool) -> str:
    """The k nearest of the user's active vectors, then their facts.

    Walking the graph, ORDER BY repeats the index's expression exactly and the
    dimension is written into the text, so that the planner can match the
    partial index. Scanning exactly, the plain `embedding <=> q` is not the
    index's expression, so the index cannot serve it: the user's rows come
    from the (user_id, model) btree.
    """
    n = int(dims)
    if by_index:
        distance = f"v.embedding::vector({n}) <=> %(query)b::vector({n})"
    else:
        distance = "v.embedding <=> %(query)b"
    agents = "" if all_agents else " AND v.agent_key = ANY (%(agents)s)"
    visible = "" if all_agents else " AND COALESCE(f.agent_id, '') = ANY (%(agents)s)"
    return (
        f"WITH near AS MATERIALIZED (SELECT v.fact_rowid, {distance} AS distance FROM fact_vectors v"
        f" WHERE v.user_id = %(user)s AND v.model = %(model)s AND v.dims = {n} AND v.active{agents}"
        f" ORDER BY {distance} LIMIT %(k)s)"
        f" SELECT {FACT_COLUMNS}, near.distance FROM near JOIN facts f ON f.rowid = near.fact_rowid"
        # the fact's own status and agent, checked again: the vector row only mirrors them
        f" WHERE f.user_id = %(user)s AND f.status = 'active' AND NOT f.purged{visible}"
        " ORDER BY near.distance, f.rowid"
    )
