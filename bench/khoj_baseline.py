"""The baseline: Khoj's memory recall policy, as plain SQL and numpy over mnemo's tables.

Khoj puts into each turn the 10 most recent memories updated within the last
7 days plus the 10 memories nearest to the query (pgvector, exact, no index),
with no lexical arm. Here that is rebuilt over the same SQLite file, the same
facts and the same vectors that mnemo reads, so the comparison measures the
recall *policy and its execution* and nothing else:

- recency: one indexed SELECT on `facts`, newest first;
- semantic: every query SELECTs all of the user's embedding blobs from
  `fact_vectors` and scores them with an exact numpy cosine (no index, no
  cache; the vectors are unit length, so cosine is a dot product), then
  reads the 10 winners' rows;
- the union of both, by fact id.

It only reads, through the store's own connection, and returns (id, text)
pairs rather than full `Fact` objects, which if anything flatters it. It is a
yardstick for the benchmark, not a product path.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from mnemo.store.rows import ts


class KhojBaseline:
    def __init__(self, conn, model: str, *, recency_days: float = 7.0, k: int = 10) -> None:
        self.conn = conn
        self.model = model
        self.recency_days = recency_days
        self.k = k

    def recent(self, user_id: str, now: datetime) -> list[tuple[str, str]]:
        since = ts(now - timedelta(days=self.recency_days))
        return self.conn.execute(
            "SELECT id, text FROM facts WHERE user_id = ? AND status = 'active' AND last_seen_at >= ?"
            " ORDER BY created_at DESC LIMIT ?",
            (user_id, since, self.k),
        ).fetchall()

    def nearest(self, user_id: str, vector: np.ndarray) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT fact_rowid, embedding FROM fact_vectors WHERE user_id = ? AND model = ?",
            (user_id, self.model),
        ).fetchall()
        if not rows:
            return []
        rowids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(len(rows), -1)
        scores = matrix @ np.asarray(vector, np.float32)
        k = min(self.k, len(rows))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        wanted = [int(rowids[i]) for i in top]
        marks = ", ".join("?" * len(wanted))
        found = dict(
            (rid, (fid, text))
            for rid, fid, text in self.conn.execute(
                f"SELECT rowid, id, text FROM facts WHERE rowid IN ({marks}) AND status = 'active'",
                wanted,
            )
        )
        return [found[rid] for rid in wanted if rid in found]

    def recall(self, user_id: str, vector: np.ndarray, now: datetime) -> list[tuple[str, str]]:
        """Recent facts first, then the nearest ones not already included."""
        out = dict(self.recent(user_id, now))
        for fid, text in self.nearest(user_id, vector):
            out.setdefault(fid, text)
        return list(out.items())
