"""Vectors kept between benchmark runs: the same model, the same text, the same vector.

    --embed-cache DIR   (bench/longmemeval.py, bench/locomo.py, bench/fusion.py, bench/ranker.py)

Embedding LongMemEval_S's 73,000 turns takes most of an hour on two cores; every
later run of a quality benchmark reads them back from one SQLite file per model
in DIR, keyed by the SHA-256 of whether it is a query and the text. A vector
read back is the one the model gave, byte for byte, so the figures do not
change; ingest timings do, and a bench run with a cache says so.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class CachedEmbedder:
    """An embedder's `embed_sync` and `embed_queries`, each vector computed once per text."""

    def __init__(self, embedder, directory: Path) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        directory.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(directory / f"{self.model_name}.sqlite", check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
        self.hits = self.misses = 0

    def embed_sync(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        keys = [hashlib.sha256(f"{'q' if queries else 'd'}\0{t}".encode()).digest() for t in texts]
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            rows = self._db.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk
            )
            found.update((k, np.frombuffer(v, np.float32)) for k, v in rows)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.hits += len(keys) - sum(k not in found for k in keys)
        self.misses += sum(k not in found for k in keys)
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            vectors = self.embedder.embed_sync([text_of[k] for k in missing], queries=queries)
            for k, v in zip(missing, vectors, strict=True):
                found[k] = np.asarray(v, np.float32)
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)", [(k, found[k].tobytes()) for k in missing]
                )
        if not keys:
            return self.embedder.embed_sync([], queries=queries)
        return np.stack([found[k] for k in keys])

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts, queries=True)
