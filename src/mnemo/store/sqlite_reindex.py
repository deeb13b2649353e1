"""What `mnemo reindex` reads and writes in the SQLite store (see mnemo.reindex)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..domain import User
from .base import Unembedded
from .sqlite_rows import user_from


class ReindexMixin:
    """Part of SQLiteStore (it supplies `_run`, `_tx`, `_conn`, `_generation` and `_cache`)."""

    async def users_with_facts(self) -> list[User]:
        def select():
            rows = self._conn.execute(
                "SELECT * FROM users WHERE id IN (SELECT user_id FROM facts) ORDER BY name"
            )
            return [user_from(r) for r in rows]

        return await self._run(select)

    async def unembedded(self, user_id: str, model: str, after: int, limit: int) -> list[Unembedded]:
        def select():
            rows = self._conn.execute(
                "SELECT f.rowid, f.id, f.version, f.text FROM facts f"
                " WHERE f.user_id = ? AND f.purged = 0 AND f.rowid > ? AND NOT EXISTS"
                " (SELECT 1 FROM fact_vectors v WHERE v.fact_rowid = f.rowid AND v.model = ?)"
                " ORDER BY f.rowid LIMIT ?",
                (user_id, after, model, int(limit)),
            )
            return [Unembedded(*r) for r in rows]

        return await self._run(select)

    async def add_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[Unembedded, np.ndarray]]
    ) -> int:
        def write(cur) -> int:
            written = 0
            for fact, vector in vectors:
                cur.execute(
                    "INSERT INTO fact_vectors (fact_rowid, user_id, model, embedding)"
                    " SELECT rowid, user_id, ?, ? FROM facts"
                    " WHERE rowid = ? AND user_id = ? AND version = ? AND purged = 0"
                    " ON CONFLICT (fact_rowid, model) DO NOTHING",
                    (model, np.asarray(vector, np.float32).tobytes(), fact.rowid, user_id, fact.version),
                )
                written += cur.rowcount
            if written:
                self._bump(cur, user_id)
            return written

        return await self._run(self._write_vectors, user_id, model, write)

    async def vector_models(self, user_id: str) -> dict[str, int]:
        def select():
            rows = self._conn.execute(
                "SELECT model, COUNT(*) FROM fact_vectors WHERE user_id = ? GROUP BY model ORDER BY model",
                (user_id,),
            )
            return dict(rows.fetchall())

        return await self._run(select)

    async def drop_vectors(self, user_id: str, keep: str) -> int:
        def write(cur) -> int:
            cur.execute("DELETE FROM fact_vectors WHERE user_id = ? AND model != ?", (user_id, keep))
            dropped = cur.rowcount
            if dropped:
                self._bump(cur, user_id)
            return dropped

        return await self._run(self._write_vectors, user_id, keep, write)

    def _bump(self, cur, user_id: str) -> None:
        """Other processes' caches of this user's vectors reload (see store/vectors.py)."""
        cur.execute(
            "INSERT INTO vector_generations VALUES (?, 1)"
            " ON CONFLICT (user_id) DO UPDATE SET generation = generation + 1",
            (user_id,),
        )

    def _write_vectors(self, user_id: str, model: str, write) -> int:
        n = self._tx(write)
        if n:
            self._cache.forget((user_id, model))  # and the others' generation moved on
        return n
