"""What `mnemo reindex` reads and writes in the PostgreSQL store (see mnemo.reindex).

Every statement names its user; who has facts at all is the one question across
users, answered (ids only) by mnemo_users_with_facts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..domain import User
from .base import Unembedded


class ReindexMixin:
    """Part of PostgresStore (it supplies `_tx` and `_user_row`)."""

    async def users_with_facts(self) -> list[User]:
        async with self._tx() as cur:
            await cur.execute("SELECT * FROM mnemo_users_with_facts()")
            ids = [r[0] for r in await cur.fetchall()]
            found = [await self._user_row(cur, user_id) for user_id in ids]
        return [u for u in found if u is not None]

    async def unembedded(self, user_id: str, model: str, after: int, limit: int) -> list[Unembedded]:
        async with self._tx(user_id) as cur:
            await cur.execute(
                "SELECT f.rowid, f.id, f.version, f.text FROM facts f"
                " WHERE f.user_id = %(user)s AND NOT f.purged AND f.rowid > %(after)s AND NOT EXISTS"
                " (SELECT FROM fact_vectors v WHERE v.user_id = %(user)s AND v.fact_rowid = f.rowid"
                " AND v.model = %(model)s)"
                " ORDER BY f.rowid LIMIT %(limit)s",
                {"user": user_id, "after": after, "model": model, "limit": int(limit)},
            )
            return [Unembedded(*r) for r in await cur.fetchall()]

    async def add_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[Unembedded, np.ndarray]]
    ) -> int:
        written = 0
        async with self._tx(user_id) as cur:
            for fact, vector in vectors:
                vector = np.asarray(vector, dtype=np.float32)
                await cur.execute(
                    "INSERT INTO fact_vectors"
                    " (fact_rowid, user_id, model, dims, active, agent_key, embedding)"
                    " SELECT rowid, %(user)s, %(model)s, %(dims)s, status = 'active', COALESCE(agent_id, ''),"
                    " %(vector)b FROM facts"
                    " WHERE user_id = %(user)s AND rowid = %(rowid)s AND version = %(version)s AND NOT purged"
                    " ON CONFLICT (fact_rowid, model) DO NOTHING",
                    {
                        "user": user_id,
                        "model": model,
                        "dims": vector.shape[0],
                        "vector": vector,
                        "rowid": fact.rowid,
                        "version": fact.version,
                    },
                )
                written += cur.rowcount
            if written:
                await cur.execute(
                    "INSERT INTO vector_counts VALUES (%s, %s, %s) ON CONFLICT (user_id, model)"
                    " DO UPDATE SET n = vector_counts.n + excluded.n",
                    (user_id, model, written),
                )
        return written

    async def vector_models(self, user_id: str) -> dict[str, int]:
        async with self._tx(user_id) as cur:
            await cur.execute(
                "SELECT model, count(*) FROM fact_vectors WHERE user_id = %s GROUP BY model ORDER BY model",
                (user_id,),
            )
            return dict(await cur.fetchall())

    async def drop_vectors(self, user_id: str, keep: str) -> int:
        async with self._tx(user_id) as cur:
            await cur.execute("DELETE FROM fact_vectors WHERE user_id = %s AND model <> %s", (user_id, keep))
            dropped = cur.rowcount
            # vector_counts is never deleted from: a model with none left counts 0
            await cur.execute(
                "UPDATE vector_counts SET n = 0 WHERE user_id = %s AND model <> %s AND n <> 0",
                (user_id, keep),
            )
        return dropped
