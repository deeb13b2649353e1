"""Embedders for tests: a second model (the local model's vectors projected to fewer dimensions
by a fixed random matrix, so still about the meaning), and one that records what it was given."""

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


class RecordingEmbedder:
    """The same model, keeping every text it was asked to embed (what left for the model)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return await self.inner.embed(texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return await self.inner.embed_queries(texts)
