"""The textbook baselines every quality benchmark prints beside mnemo, over the same store.

- cosine: every active fact of the person ranked by the cosine of its stored
  vector with the question's (exact, no floor, no depth cut);
- rrf: reciprocal-rank fusion (k = 60, equal weights) of that full cosine
  ranking and a full Okapi BM25 ranking of the same facts (k1 1.2, b 0.75,
  words lower-cased, no stemming, no stop words: `mnemo.recall.recaller.bm25`).

They read the SQLite file mnemo wrote, through the store's own connection, so
mnemo and they see the same facts, texts and vectors. A yardstick for the
benchmarks, not a product path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mnemo.recall.recaller import bm25

RRF_K = 60


@dataclass(frozen=True)
class _Doc:
    """What `bm25` reads of a fact."""

    id: str
    text: str


class Textbook:
    def __init__(self, conn, user_id: str, model: str) -> None:
        rows = conn.execute(
            "SELECT f.id, f.text, v.embedding FROM facts f JOIN fact_vectors v ON v.fact_rowid = f.rowid"
            " WHERE f.user_id = ? AND f.status = 'active' AND v.model = ? ORDER BY f.rowid",
            (user_id, model),
        ).fetchall()
        self.docs = [_Doc(r[0], r[1]) for r in rows]
        self.matrix = (
            np.frombuffer(b"".join(r[2] for r in rows), np.float32).reshape(len(rows), -1)
            if rows
            else np.zeros((0, 0), np.float32)
        )

    def cosine(self, vector: np.ndarray) -> list[str]:
        if not self.docs:
            return []
        scores = self.matrix @ np.asarray(vector, np.float32)
        return [self.docs[i].id for i in np.argsort(-scores, kind="stable")]

    def bm25(self, query: str) -> list[str]:
        return [d.id for d, _ in bm25(query, self.docs)]  # type: ignore[arg-type]

    def rrf(self, query: str, vector: np.ndarray) -> list[str]:
        score: dict[str, float] = {}
        for ranking in (self.cosine(vector), self.bm25(query)):
            for rank, fid in enumerate(ranking, 1):
                score[fid] = score.get(fid, 0.0) + 1 / (RRF_K + rank)
        return sorted(score, key=lambda fid: -score[fid])
