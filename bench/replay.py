"""What the recall-quality benchmarks share: a dated replay into a real store, and the methods compared.

- `Clock`: the injectable clock, moved to each session's date while it is stored
  and to the question's date when it is asked.
- `replay`: texts committed as facts one commit per run of equal dates, each
  commit at its date (record time, last-seen time and valid-from).
- `rankers`: mnemo's `Recaller` with the given arms, Khoj's policy
  (bench/khoj_baseline.py) and the textbook baselines (bench/textbook.py:
  plain cosine, plain RRF of BM25 and cosine), each as (question text, its
  vector) -> recalled fact ids, best first, up to `depth`.
- `local_embedder`: one of the local models by its `MNEMO_EMBED_LOCAL` name,
  warmed up (`--embedder` of the recall benchmarks), its vectors kept in a
  cache when one is given (bench/embed_cache.py, `--embed-cache`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from bench.embed_cache import CachedEmbedder
from bench.khoj_baseline import KhojBaseline
from bench.textbook import Textbook
from mnemo.domain import Scope, Source, SourceKind
from mnemo.recall.recaller import Recaller
from mnemo.settings import RecallSettings, with_floors
from mnemo.store.sqlite import SQLiteStore
from mnemo.write import changes

EMBEDDERS = ("minilm", "multilingual-e5")
# The methods that are not mnemo's arms: Khoj's policy and the textbook baselines.
BASELINES = ("khoj", "cosine", "rrf")
# Every quality benchmark prints these two beside mnemo (the bar: mnemo above both).
TEXTBOOK: dict[str, Sequence[str] | str] = {
    "plain cosine": "cosine",
    "plain RRF (BM25 + cosine, k 60)": "rrf",
}


def local_embedder(name: str, cache: Path | None = None):
    """The local model `MNEMO_EMBED_LOCAL=name` gives, loaded and warmed up. Question vectors
    come from its `embed_sync(texts, queries=True)`, as recall's from `embed_queries`."""
    if name == "multilingual-e5":
        from mnemo.providers.multilingual import MultilingualEmbedder

        embedder = MultilingualEmbedder()
    else:
        from mnemo.providers.embed import LocalEmbedder

        embedder = LocalEmbedder()
    embedder.embed_sync(["warm up the model"])
    return embedder if cache is None else CachedEmbedder(embedder, cache)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


Ranker = Callable[[str, np.ndarray], Awaitable[list[str]]]


def rankers(
    store: SQLiteStore,
    scope: Scope,
    embedder,
    clock: Clock,
    depth: int,
    arms: dict[str, Sequence[str] | str],
) -> dict[str, Ranker]:
    """One ranker per name: mnemo with those arms, or the baseline of that name (BASELINES).

    Benchmark configuration: max_facts `depth` and no token budget (the default
    1,000-token budget would cut long raw turns before `depth`).
    """
    recall = with_floors(RecallSettings(max_facts=depth, max_tokens=10**9), "recall", embedder.model_name)
    recaller = Recaller(store, embedder, recall, clock)  # the model's floors, as served
    khoj = KhojBaseline(store._conn, embedder.model_name)
    textbook = Textbook(store._conn, scope.user_id, embedder.model_name)

    def mnemo(arms: Sequence[str]) -> Ranker:
        async def rank(text: str, v: np.ndarray) -> list[str]:
            hits = await recaller.recall(scope, text, vector=v, limit=depth, arms=tuple(arms))
            return [h.fact.id for h in hits]

        return rank

    async def baseline(text: str, v: np.ndarray) -> list[str]:
        return [fid for fid, _ in khoj.recall(scope.user_id, v, clock())][:depth]

    async def cosine(text: str, v: np.ndarray) -> list[str]:
        return textbook.cosine(v)[:depth]

    async def fused(text: str, v: np.ndarray) -> list[str]:
        return textbook.rrf(text, v)[:depth]

    named = {"khoj": baseline, "cosine": cosine, "rrf": fused}
    return {name: named[a] if isinstance(a, str) else mnemo(a) for name, a in arms.items()}


async def replay(
    store: SQLiteStore,
    scope: Scope,
    embedder,
    clock: Clock,
    items: list[tuple[datetime, str]],
    vectors: np.ndarray,
    sources: Sequence[Source] | None = None,
) -> list[str]:
    """Commit the (date, text) items in order, one commit per run of equal dates; their fact ids.

    Each fact's source is an import, or the item's own in `sources` (its conversation and
    speaker, as a fact learnt from a conversation has them). A memory says a thing once: an
    item whose text (as stored) an earlier one already has becomes no new fact, and its id is
    the earlier fact's.
    """
    sources = sources or [Source(SourceKind.IMPORT)] * len(items)
    ids: list[str] = []
    seen: dict[str, str] = {}  # text hash -> fact id
    start = 0
    while start < len(items):
        at = items[start][0]
        end = start
        while end < len(items) and items[end][0] == at:
            end += 1
        clock.at = at
        batch = []
        for (_, text), vector, source in zip(
            items[start:end], vectors[start:end], sources[start:end], strict=True
        ):
            fact = changes.new_fact(
                scope, text, now=at, source=source, valid_from=at, embedding_model=embedder.model_name
            )
            if fact.text_hash in seen:
                ids.append(seen[fact.text_hash])
                continue
            seen[fact.text_hash] = fact.id
            ids.append(fact.id)
            batch.append(changes.create(fact, vector, "import"))
        if batch:
            await store.commit(scope.user_id, batch, at)
        start = end
    return ids
