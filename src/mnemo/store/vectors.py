"""Exact nearest-neighbour search over one user's vectors, held in memory as a matrix.

Measured on the 2-core reference machine (384-d float32, top 20): sqlite-vec's
vec0 table answered in 7.7-16 ms at 10k vectors per partition and 81 ms at
100k; a numpy matrix-vector product over the same vectors takes 0.3 ms and
16 ms, and is exact. So the SQLite store keeps vectors as plain blobs (the
durable copy) and searches this cache, which it loads per user on first use.

Past COARSE_FROM vectors a user's scan is bound by memory bandwidth (100k
vectors: 154 MB, 12-16 ms). There the search first scans 8-bit codes of the
vectors (faiss's scalar quantizer: a quarter of the bytes) for the best
CANDIDATES x k, then scores those exactly: the same cosines, and on the
100k-fact benchmark the same top 20 as the exact scan (bench/recall.py reports
the share of the exact top 20 found).

Consistency across processes: every commit that touches a user's vectors bumps
that user's generation in the database, in the same transaction. A search
compares the cached generation with the stored one and reloads when another
process wrote in between; this process's own commits patch the cache in place.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

log = logging.getLogger(__name__)

COARSE_FROM = 50_000  # vectors of one user from which a search scans 8-bit codes first
CANDIDATES = 10  # times k: how many of the codes' best are scored exactly
MIN_CANDIDATES = 200


class _Coarse:
    """8-bit codes of the first `rows` slots of an entry's matrix, scanned for candidates."""

    def __init__(self, matrix: np.ndarray) -> None:
        import faiss

        faiss.omp_set_num_threads(1)  # one query at a time: no team of threads to wake or spin
        self._faiss = faiss
        self.index = faiss.IndexScalarQuantizer(
            matrix.shape[1], faiss.ScalarQuantizer.QT_8bit_uniform, faiss.METRIC_INNER_PRODUCT
        )
        self.index.train(matrix)
        self.index.add(matrix)

    @property
    def rows(self) -> int:
        return int(self.index.ntotal)

    def add(self, vectors: np.ndarray) -> None:
        self.index.add(vectors)

    def candidates(self, query: np.ndarray, allowed: np.ndarray, n: int) -> np.ndarray:
        """The slots of the `n` best allowed codes (fewer when fewer are allowed)."""
        bits = np.packbits(allowed, bitorder="little")
        selector = self._faiss.IDSelectorBitmap(len(allowed), self._faiss.swig_ptr(bits))
        params = self._faiss.SearchParameters()
        params.sel = selector
        _, found = self.index.search(query[None, :], n, params=params)
        slots: np.ndarray = found[0][found[0] >= 0]
        return slots


@dataclass
class Row:
    """A change to one cached row: a new vector, a new status or agent, or removal."""

    rowid: int
    vector: np.ndarray | None  # None: keep the vector the row already has
    active: bool
    agent: str  # '' = the default agent
    drop: bool = False


def merge(rows: Sequence[Row]) -> dict[int, Row]:
    """Several changes to one row in a commit: the last wins, but keeps the newest vector."""
    out: dict[int, Row] = {}
    for r in rows:
        earlier = out.get(r.rowid)
        vector = r.vector if r.vector is not None else (earlier.vector if earlier else None)
        out[r.rowid] = Row(r.rowid, vector, r.active, r.agent, r.drop)
    return out


@dataclass
class Columns:
    """A user's vectors as loaded from the database: parallel lists, vectors as float32 bytes."""

    rowids: list[int] = field(default_factory=list)
    vectors: list[bytes] = field(default_factory=list)
    active: list[bool] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, rows: Iterable[Row]) -> Columns:
        out = cls()
        for r in rows:
            if r.vector is None or r.drop:
                continue
            out.rowids.append(r.rowid)
            out.vectors.append(np.asarray(r.vector, np.float32).tobytes())
            out.active.append(r.active)
            out.agents.append(r.agent)
        return out


class _Entry:
    """One user's vectors in preallocated arrays, patched in place.

    Slots `[0, used)` hold rows; a new row takes the next slot (the arrays double
    when full), a dropped row leaves a hole that no search can find (inactive,
    and gone from `position`). So a commit costs in proportion to the rows it
    changed, not to the user's size; the holes are packed away once they
    outnumber the rows.
    """

    def __init__(self, generation: int, dims: int, capacity: int) -> None:
        self.generation = generation
        self.used = 0
        self.holes = 0
        self.matrix = np.zeros((capacity, dims), np.float32)
        self.rowids = np.zeros(capacity, np.int64)
        self.active = np.zeros(capacity, bool)
        self.agents = np.zeros(capacity, np.int32)  # codes into agent_names
        self.agent_names: list[str] = []
        self.code: dict[str, int] = {}
        self.position: dict[int, int] = {}  # rowid -> slot
        self.coarse: _Coarse | None = None  # codes of slots [0, coarse.rows), past COARSE_FROM

    @property
    def size(self) -> int:
        """Rows held, holes excluded."""
        return self.used - self.holes

    @classmethod
    def build(cls, generation: int, columns: Columns, dims: int) -> _Entry:
        n = len(columns.rowids)
        entry = cls(generation, dims, max(n, 16))
        if n:
            entry.matrix[:n] = np.frombuffer(b"".join(columns.vectors), np.float32).reshape(n, dims)
            entry.rowids[:n] = columns.rowids
            entry.active[:n] = columns.active
            entry.agents[:n] = [entry._agent_code(a) for a in columns.agents]
            entry.position = {rid: i for i, rid in enumerate(columns.rowids)}
            entry.used = n
        return entry

    def agent_mask(self, agents: Sequence[str]) -> np.ndarray:
        allowed = np.array([name in agents for name in self.agent_names] or [False], bool)
        mask: np.ndarray = allowed[self.agents[: self.used]]
        return mask

    def patch(self, rows: Sequence[Row], generation: int) -> None:
        for r in merge(rows).values():
            slot = self.position.get(r.rowid)
            if r.drop:
                if slot is not None:
                    del self.position[r.rowid]
                    self.active[slot] = False
                    self.holes += 1
                continue
            if slot is None:
                if r.vector is None:  # nothing to search with: the row stays out, as on a reload
                    continue
                slot = self._append(r.rowid)
            if r.vector is not None:
                self.matrix[slot] = r.vector
                if self.coarse is not None and slot < self.coarse.rows:
                    self.coarse = None  # a changed vector: encoded again at the next search
            self.active[slot] = r.active
            self.agents[slot] = self._agent_code(r.agent)
        self.generation = generation
        if self.holes > max(self.size, 64):
            self._pack()

    def top(
        self, queries: np.ndarray, allowed: np.ndarray, k: int, coarse_from: int
    ) -> list[list[tuple[int, float]]]:
        """Per query (a row of `queries`): (rowid, cosine) of the k best allowed slots among
        `[0, used)`; k <= allowed.sum(). An exact scan reads the matrix once for every query."""
        if self.size >= coarse_from:
            return [self._top_coarse(q, allowed, k) for q in queries]
        with _one_blas_thread():
            scores = self.matrix[: self.used] @ queries.T
        scores[~allowed] = -np.inf
        return [self._best(scores[:, j], k, None) for j in range(queries.shape[0])]

    def _top_coarse(self, query: np.ndarray, allowed: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The 8-bit codes choose candidates, whose full vectors are then scored."""
        slots = self._coarse_codes().candidates(query, allowed, max(k * CANDIDATES, MIN_CANDIDATES))
        with _one_blas_thread():
            scores = self.matrix[slots] @ query
        return self._best(scores, k, slots)

    def _best(self, scores: np.ndarray, k: int, slots: np.ndarray | None) -> list[tuple[int, float]]:
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        chosen = top if slots is None else slots[top]
        return [(int(self.rowids[i]), float(scores[j])) for i, j in zip(chosen, top, strict=True)]

    def _coarse_codes(self) -> _Coarse:
        """The codes of every used slot: built on first need, extended by what was appended since."""
        if self.coarse is None:
            self.coarse = _Coarse(self.matrix[: self.used])
        elif self.coarse.rows < self.used:
            self.coarse.add(self.matrix[self.coarse.rows : self.used])
        return self.coarse

    def _agent_code(self, agent: str) -> int:
        code = self.code.get(agent)
        if code is None:
            code = self.code[agent] = len(self.agent_names)
            self.agent_names.append(agent)
        return code

    def _append(self, rowid: int) -> int:
        if self.used == self.matrix.shape[0]:
            self._resize(2 * self.used)
        slot = self.used
        self.used += 1
        self.rowids[slot] = rowid
        self.position[rowid] = slot
        return slot

    def _resize(self, capacity: int, keep: np.ndarray | None = None) -> None:
        """New arrays of `capacity` slots holding the rows at `keep` (default: every used slot)."""
        keep = np.arange(self.used) if keep is None else keep
        for name in ("matrix", "rowids", "active", "agents"):
            old = getattr(self, name)
            new = np.zeros((capacity, *old.shape[1:]), old.dtype)
            new[: len(keep)] = old[keep]
            setattr(self, name, new)
        self.used, self.holes = len(keep), 0
        self.position = {int(rid): i for i, rid in enumerate(self.rowids[: self.used])}

    def _pack(self) -> None:
        keep = np.fromiter(sorted(self.position.values()), np.int64, len(self.position))
        self._resize(max(2 * len(keep), 16), keep)
        self.coarse = None  # the slots moved: encoded again at the next search


class VectorCache:
    """Per-(user, model) matrices, least recently used evicted past `max_vectors`."""

    def __init__(self, max_vectors: int = 1_000_000, coarse_from: int = COARSE_FROM) -> None:
        self.max_vectors = max_vectors
        self.coarse_from = coarse_from
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def search(
        self,
        key: tuple[str, str],
        generation: int,
        load: Callable[[], Columns],
        query: np.ndarray,
        k: int,
        agents: Sequence[str] | None,
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the k best active vectors whose agent is in `agents` (None: any)."""
        return self.search_many(key, generation, load, np.atleast_2d(query), k, agents)[0]

    def search_many(
        self,
        key: tuple[str, str],
        generation: int,
        load: Callable[[], Columns],
        queries: np.ndarray,
        k: int,
        agents: Sequence[str] | None,
    ) -> list[list[tuple[int, float]]]:
        """Per query (a row of `queries`): (rowid, cosine) of the k best active vectors whose
        agent is in `agents` (None: any): one scan of the matrix answers every query."""
        queries = np.asarray(queries, np.float32)
        with self._lock:  # a commit patches the arrays in place: not while they are read
            entry = self._get(key, generation, load, queries.shape[1])
            if entry.size == 0 or k <= 0:
                return [[] for _ in queries]
            allowed = entry.active[: entry.used].copy()
            if agents is not None:
                allowed &= entry.agent_mask(agents)
            k = min(k, int(allowed.sum()))
            if k == 0:
                return [[] for _ in queries]
            return entry.top(queries, allowed, k, self.coarse_from)

    def apply(self, key: tuple[str, str], before: int, after: int, rows: Sequence[Row]) -> None:
        """Patch a cached entry after this process committed `rows` (generation before → after)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return
            if entry.generation != before:
                del self._entries[key]  # someone else wrote in between: reload next time
                return
            try:
                entry.patch(rows, after)
            except Exception:  # a half-patched entry must not answer: reload it at the next search
                del self._entries[key]
                log.exception("the cached vectors of %s could not be patched; reloading them", key[0])

    def moved_on(self, user_id: str, before: int, after: int, untouched: Callable[[str], bool]) -> None:
        """After this process wrote some of the user's vectors (generation before → after): the
        entries of the models written go (they reload at the next search); those of the models
        `untouched` and still at `before` are current at `after`."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == user_id]:
                entry = self._entries[key]
                if untouched(key[1]) and entry.generation == before:
                    entry.generation = after
                else:
                    del self._entries[key]

    def _get(self, key: tuple[str, str], generation: int, load: Callable[[], Columns], dims: int) -> _Entry:
        """The entry at `generation`, loaded when missing or stale (the caller holds the lock)."""
        entry = self._entries.get(key)
        if entry is not None and entry.generation == generation:
            self._entries.move_to_end(key)
            return entry
        entry = self._entries[key] = _Entry.build(generation, load(), dims)
        total = sum(e.size for e in self._entries.values())
        while total > self.max_vectors and len(self._entries) > 1:
            _, evicted = self._entries.popitem(last=False)
            total -= evicted.size
        return entry


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController().select(user_api="blas")


def _one_blas_thread() -> Any:
    """A scan is memory-bound: a second BLAS thread barely speeds it up alone, and under load
    it busy-waits for work (5-8 ms to wake it on the 2-core machine). Scans run on one."""
    return _blas().limit(limits=1)
