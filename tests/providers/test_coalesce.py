"""Concurrent embedding calls share model runs and each gets its own rows back."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mnemo.providers.coalesce import CoalescingEmbedder


class Counting:
    model_name = "counting"
    dimensions = 2

    def __init__(self, fail: bool = False, refuse: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail
        self.refuse = refuse  # a text the model cannot take (in any batch that holds it)

    async def embed(self, texts):
        self.calls.append(list(texts))
        await asyncio.sleep(0.01)
        if self.fail or (self.refuse is not None and self.refuse in texts):
            raise RuntimeError("model crashed")
        return np.array([[len(t), i] for i, t in enumerate(texts)], np.float32)

    async def embed_queries(self, texts):
        self.calls.append(["query: " + t for t in texts])
        await asyncio.sleep(0.01)
        return -np.array([[len(t), i] for i, t in enumerate(texts)], np.float32)


async def test_calls_that_arrive_during_a_run_share_the_next_one():
    inner = Counting()
    embedder = CoalescingEmbedder(inner)
    first = asyncio.create_task(embedder.embed(["x"]))
    await asyncio.sleep(0.002)  # the first run is under way
    later = await asyncio.gather(*(embedder.embed(["x" * n]) for n in range(2, 9)))
    assert (await first)[0][0] == 1
    assert [r[0][0] for r in later] == list(range(2, 9))  # each caller gets its own row
    assert inner.calls[0] == ["x"] and len(inner.calls) == 2 and len(inner.calls[1]) == 7


async def test_a_failure_reaches_every_caller_of_that_batch():
    embedder = CoalescingEmbedder(Counting(fail=True))
    results = await asyncio.gather(embedder.embed(["a"]), embedder.embed(["b"]), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    with pytest.raises(RuntimeError):
        await embedder.embed(["c"])


async def test_one_callers_bad_text_fails_only_that_caller():
    inner = Counting(refuse="bad")
    embedder = CoalescingEmbedder(inner)
    first = asyncio.create_task(embedder.embed(["x"]))
    await asyncio.sleep(0.002)  # the next callers wait for one batch together
    results = await asyncio.gather(
        *(embedder.embed([t]) for t in ("aa", "bad", "cccc")), return_exceptions=True
    )
    assert (await first)[0][0] == 1
    assert isinstance(results[1], RuntimeError)
    assert [r[0][0] for r in (results[0], results[2])] == [2, 4]  # the others got their own rows
    assert ["aa", "bad", "cccc"] in inner.calls  # they were batched, and failed together first


async def test_a_lone_surrogate_fails_only_its_caller_on_the_real_model(embedder):
    coalescing = CoalescingEmbedder(embedder)
    texts = ["I am allergic to peanuts", "\ud800 broken", "where do I live?"]
    results = await asyncio.gather(*(coalescing.embed([t]) for t in texts), return_exceptions=True)
    assert isinstance(results[1], Exception)
    alone = embedder.embed_sync([texts[0], texts[2]])
    assert np.allclose(results[0][0], alone[0], atol=1e-4) and np.allclose(results[2][0], alone[1], atol=1e-4)


async def test_the_real_model_gives_the_same_vectors_batched(embedder):
    coalescing = CoalescingEmbedder(embedder)
    texts = ["I am allergic to peanuts", "where do I live?", "My sister Ana lives in Porto"]
    together = await asyncio.gather(*(coalescing.embed([t]) for t in texts))
    alone = embedder.embed_sync(texts)
    for got, want in zip(together, alone, strict=True):
        assert np.allclose(got[0], want, atol=1e-4)


async def test_texts_to_store_and_to_search_with_are_never_embedded_together():
    inner = Counting()
    embedder = CoalescingEmbedder(inner)
    first = asyncio.create_task(embedder.embed(["x"]))
    await asyncio.sleep(0.002)  # the first run is under way: the rest queue up
    stored, searched, stored_too = await asyncio.gather(
        embedder.embed(["ab"]), embedder.embed_queries(["abc", "abcd"]), embedder.embed(["abcde"])
    )
    await first
    assert [r[0] for r in stored] == [2] and [r[0] for r in stored_too] == [5]
    assert [r[0] for r in searched] == [-3, -4]  # the query side's vectors, each its own
    runs = inner.calls[1:]
    assert sorted(runs) == [["ab", "abcde"], ["query: abc", "query: abcd"]]  # one run per kind
