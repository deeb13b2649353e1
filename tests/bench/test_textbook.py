"""bench/textbook.py: plain cosine and plain RRF over every active fact of one person."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from bench.replay import Clock, replay
from bench.textbook import RRF_K, Textbook
from mnemo.domain import Scope
from mnemo.store.sqlite import SQLiteStore

AT = datetime(2026, 3, 1, tzinfo=UTC)


class Named:
    model_name = "test-model"


def unit(*v: float) -> np.ndarray:
    a = np.array(v, np.float32)
    return a / np.linalg.norm(a)


async def test_full_rankings_of_one_persons_facts_fused_at_k_60(tmp_path):
    store = SQLiteStore(tmp_path / "t.db", clock=Clock(AT))
    await store.open()
    try:
        me, other = Scope((await store.ensure_user("me")).id), Scope((await store.ensure_user("other")).id)
        texts = ["the cat sleeps", "a red kayak", "the kayak club meets", "my cat is called Miso"]
        vectors = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 1, 1), unit(1, 0, 1)])
        ids = await replay(store, me, Named(), Clock(AT), [(AT, t) for t in texts], vectors)
        await replay(store, other, Named(), Clock(AT), [(AT, "kayak kayak")], unit(0, 1, 0)[None, :])
        book = Textbook(store._conn, me.user_id, "test-model")
        cat, kayak, club, miso = ids
        # cosines 0, 1, 0.71, 0: every fact of this person, ties in the order stored
        assert book.cosine(unit(0, 1, 0)) == [kayak, club, cat, miso]
        assert book.bm25("kayak") == [kayak, club]  # the shorter text first; the other person's unseen
        # BM25 ranks "the cat sleeps" 1st and Miso 2nd; cosine ranks them 3rd and 4th
        assert book.rrf("cat", unit(0, 1, 0)) == [cat, miso, kayak, club]
        assert 1 / (RRF_K + 1) + 1 / (RRF_K + 3) > 1 / (RRF_K + 2) + 1 / (RRF_K + 4) > 1 / (RRF_K + 1)
    finally:
        await store.close()
