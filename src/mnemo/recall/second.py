"""A second embedder (MNEMO_EMBED_SECOND): its cosines of a recall's candidates, which the
learned ranker reads beside the first embedder's, and its vectors of the person's facts.

Recall searches with the first embedder only; the second one scores what the arms found
(recall/features.py, SECOND) with the model trained on both (ranker-<its model>.json). Its
vector of a fact is written after the fact, not with it, so that no write waits for a second
model: a recall that meets a candidate without one (a fact written since, or every fact when
the option is new) reads all its candidates as the first embedder saw them, and asks for the
person's missing vectors to be filled in, in the background (`store.unembedded`, as `mnemo
reindex` does): one filling at a time for everyone, in small batches, so that a recall's
question waits behind one batch at most (and never more than QUESTION_WAIT past its arms:
then it is ranked without the second embedder). A fact whose text changes loses its vectors
of other models (the store drops them), so its new text is embedded again the same way; a
vector is written only while its fact is still at the version that was read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..domain import Scope
from ..providers.base import Embedder
from ..store.base import ReindexStore, SearchStore
from .fuse import Hit

BATCH_SIZE = 16  # a filling's batch: a recall's question waits behind at most one
QUESTION_WAIT = 0.25  # seconds a recall waits for the second model's question past its arms
log = logging.getLogger(__name__)


class SecondStore(SearchStore, ReindexStore, Protocol):
    """What the second embedder reads and writes: the candidates' vectors, the facts without one."""


class Second:
    def __init__(self, store: SecondStore, embedder: Embedder, *, batch_size: int = BATCH_SIZE) -> None:
        self.store = store
        self.embedder = embedder
        self.batch_size = batch_size
        # the people whose vectors are to be filled in, in the order asked; one filling at a time,
        # for everyone (the model runs one batch at a time anyway, and recalls share it)
        self._waiting: dict[str, None] = {}
        self._filler: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def model_name(self) -> str:
        return self.embedder.model_name

    async def vectors(self, scope: Scope, hits: Sequence[Hit]) -> np.ndarray | None:
        """Each hit's vector of this embedder, a row each; None while any of them has none yet
        (then the ranker reads every hit as the first embedder saw it, as it was trained to read
        either), and then the person's vectors are filled in."""
        ids = [h.fact.id for h in hits]
        stored = await self.store.vectors(Scope(scope.user_id, all_agents=True), ids, self.model_name)
        if len(stored) < len(set(ids)):
            self.fill_later(scope.user_id)
            return None
        return np.stack([stored[i] for i in ids]) if ids else None

    def fill_later(self, user_id: str) -> None:
        """Fill in the person's missing vectors in a task of the event loop, after those asked
        for before (a person asked for again while waiting keeps their place)."""
        if self._closed:
            return
        self._waiting.setdefault(user_id)
        if self._filler is None or self._filler.done():
            self._filler = asyncio.get_running_loop().create_task(self._fill_waiting())

    async def fill(self, user_id: str) -> int:
        """Give every fact of the person's that has no vector of this embedder one; how many were
        written (a fact changed meanwhile is left for the next filling)."""
        written, after = 0, 0
        while batch := await self.store.unembedded(user_id, self.model_name, after, self.batch_size):
            vectors = await self.embedder.embed([f.text for f in batch])
            pairs = list(zip(batch, vectors, strict=True))
            written += await self.store.add_vectors(user_id, self.model_name, pairs)
            after = batch[-1].rowid
        return written

    async def _fill_waiting(self) -> None:
        while self._waiting and not self._closed:
            user_id = next(iter(self._waiting))
            del self._waiting[user_id]  # asked for again from here on: filled again after the others
            try:
                await self.fill(user_id)
            except Exception:  # a failing model or store: the next recall that meets a gap asks again
                log.exception("recall: filling in %s vectors failed", self.model_name)

    async def settled(self) -> None:
        """Once every filling asked for so far (and any asked for meanwhile) has ended."""
        while self._filler is not None and not self._filler.done():
            await asyncio.gather(self._filler, return_exceptions=True)

    async def close(self) -> None:
        """Stop filling in (what is left is what has no vector: the next filling resumes there)."""
        self._closed = True
        self._waiting.clear()
        if self._filler is not None:
            self._filler.cancel()
            await asyncio.gather(self._filler, return_exceptions=True)
        aclose = getattr(self.embedder, "aclose", None)
        if aclose is not None:
            await aclose()
