"""What `mnemo reindex` reads (see mnemo.batch.reindex): the statements both stores share."""

from __future__ import annotations

from ..base import Unembedded
from .tx import Tx


async def unembedded(tx: Tx, user_id: str, model: str, after: int, limit: int) -> list[Unembedded]:
    rows = await tx.all(
        "SELECT f.rowid, f.id, f.version, f.text FROM facts f"
        " WHERE f.user_id = ? AND NOT f.purged AND f.rowid > ? AND NOT EXISTS"
        " (SELECT 1 FROM fact_vectors v WHERE v.user_id = ? AND v.fact_rowid = f.rowid AND v.model = ?)"
        " ORDER BY f.rowid LIMIT ?",
        (user_id, after, user_id, model, int(limit)),
    )
    return [Unembedded(*r) for r in rows]


async def vector_models(tx: Tx, user_id: str) -> dict[str, int]:
    rows = await tx.all(
        "SELECT model, COUNT(*) FROM fact_vectors WHERE user_id = ? GROUP BY model ORDER BY model", (user_id,)
    )
    return {r[0]: r[1] for r in rows}
