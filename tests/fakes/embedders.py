"""A second embedding model for tests that switch models: the local model's vectors,
projected to fewer dimensions by a fixed random matrix (so still about the meaning)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class ProjectedEmbedder:
    """Another model: its own name and size, and a count of the texts it was asked for."""

    def __init__(self, inner, dimensions: int = 64, model_name: str = "projected-64") -> None:
        self.inner = inner
        self.dimensions = dimensions
        self.model_name = model_name
        self.calls: list[int] = []  # how many texts each call embedded
        rng = np.random.default_rng(7)
        self._projection = rng.standard_normal((inner.dimensions, dimensions)).astype(np.float32)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = (await self.inner.embed(texts)) @ self._projection
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed(texts)

    @property
    def embedded(self) -> int:
        return sum(self.calls)
