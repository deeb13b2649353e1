"""A second embedder (MNEMO_EMBED_SECOND): its vectors filled in after the facts by the
recalls that miss them, each person's alone; its cosines read by the model trained on both; an
edited fact embedded again; a failing or model-less second embedder leaves recall as it was."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from pydantic import ValidationError

from mnemo.build import Core, build_second
from mnemo.domain import Scope
from mnemo.providers.coalesce import CoalescingEmbedder
from mnemo.providers.multilingual import MultilingualEmbedder
from mnemo.recall import recaller as recall_module
from mnemo.recall.features import FEATURES, SECOND, second_columns
from mnemo.recall.ranker import shipped
from mnemo.recall.recaller import Recaller
from mnemo.recall.second import Second
from mnemo.settings import Settings
from tests.fakes.embedders import ProjectedEmbedder
from tests.helpers import bulk_add, texts

FACTS = [
    "I play the cello in an amateur orchestra",
    "My sister Miriam works as a nurse in Salzburg",
    "I am allergic to hazelnuts",
    "I sold my car last year and take the train now",
    "My cat Mochi sleeps on the windowsill",
    "I grew up in Graz",
    "I keep bees in my garden",
    "I run a marathon every spring",
]


@pytest.fixture(scope="module")
def e5() -> MultilingualEmbedder:
    return MultilingualEmbedder()


@pytest.fixture(autouse=True)
def patient(monkeypatch):
    """Recall waits for the second model's question as long as a loaded test machine needs (it
    waits QUESTION_WAIT past the arms, then ranks without it: a test of that sets its own)."""
    monkeypatch.setattr(recall_module, "QUESTION_WAIT", 60.0)


@pytest.fixture
async def paired(store, embedder, e5, settings, clock):
    """Memory with e5 beside MiniLM, as MNEMO_EMBED_SECOND=multilingual-e5 builds it."""
    memory = Core(store, embedder, None, settings=settings, clock=clock, second=e5).memory
    yield memory
    if memory.recaller.second is not None:
        await memory.recaller.second.close()


async def second_vectors(memory, scope: Scope, model: str) -> dict[str, np.ndarray]:
    facts = await memory.list(scope, limit=1000)
    return await memory.store.vectors(Scope(scope.user_id, all_agents=True), [f.id for f in facts], model)


async def test_a_recall_fills_in_the_persons_second_vectors_and_the_model_reads_them(
    paired, alice, bob, e5, embedder
):
    recaller = paired.recaller
    assert recaller.second is not None and recaller.ranker is not None
    assert recaller.ranker.card["second_embedder"] == e5.model_name
    await bulk_add(paired, alice, FACTS)
    await bulk_add(paired, bob, ["I drive a red tractor", "I have two cats"])

    # before any vector of the second model: its columns read as the first embedder's
    hits, rows = await recaller.candidates(alice, "Which instrument do I play?")
    assert rows.shape[1] == len(FEATURES) + len(SECOND)
    assert rows[:, len(FEATURES) :].tolist() == rows[:, [0, 2, 3]].tolist()
    await recaller.second.settled()

    counts = await paired.store.vector_models(alice.user_id)
    assert counts == {embedder.model_name: len(FACTS), e5.model_name: len(FACTS)}
    assert e5.model_name not in await paired.store.vector_models(bob.user_id)  # nobody asked for Bob
    stored = await second_vectors(paired, alice, e5.model_name)
    by_text = {f.text: stored[f.id] for f in await paired.list(alice, limit=100)}
    assert np.allclose(np.stack([by_text[t] for t in FACTS]), await e5.embed(FACTS), atol=1e-5)

    question = "Which instrument do I play?"
    hits, rows = await recaller.candidates(alice, question)
    cosines = np.array([by_text[h.fact.text] @ (await e5.embed_queries([question]))[0] for h in hits])
    expected = second_columns(cosines, rows[:, : len(FEATURES)])
    assert np.allclose(rows[:, len(FEATURES) :], expected, atol=1e-5)
    assert texts(await paired.recall(question, alice))[0] == "I play the cello in an amateur orchestra"


async def test_an_edited_fact_is_embedded_again_and_an_erased_one_loses_its_vectors(paired, alice, e5):
    await bulk_add(paired, alice, FACTS)
    await paired.recaller.candidates(alice, "pets")
    await paired.recaller.second.settled()
    cat = next(f for f in await paired.list(alice) if "Mochi" in f.text)
    await paired.edit(alice, cat.id, "My cat Mochi sleeps on the sofa")
    assert cat.id not in await second_vectors(paired, alice, e5.model_name)  # it embedded the old text

    await paired.recaller.candidates(alice, "Where does my cat sleep?")
    await paired.recaller.second.settled()
    stored = await second_vectors(paired, alice, e5.model_name)
    assert np.allclose(stored[cat.id], (await e5.embed(["My cat Mochi sleeps on the sofa"]))[0], atol=1e-5)

    bees = next(f for f in await paired.list(alice) if "bees" in f.text)
    await paired.purge(alice, bees.id)
    counts = await paired.store.vector_models(alice.user_id)
    assert counts[e5.model_name] == len(FACTS) - 1


class Gated:
    """The second model, waiting at each batch until let through (and at each question, when told
    to); or failing, when told to."""

    def __init__(self, inner, *, fail: bool = False, slow_questions: bool = False) -> None:
        self.inner, self.fail, self.slow_questions = inner, fail, slow_questions
        self.model_name, self.dimensions = inner.model_name, inner.dimensions
        self.gate = asyncio.Event()
        self.batches = 0

    async def embed(self, texts):
        if self.fail:
            raise RuntimeError("the second model is broken")
        self.batches += 1
        await self.gate.wait()
        return await self.inner.embed(texts)

    async def embed_queries(self, texts):
        if self.fail:
            raise RuntimeError("the second model is broken")
        if self.slow_questions:
            await self.gate.wait()
        return await self.inner.embed_queries(texts)


async def test_closing_stops_a_filling_and_the_next_resumes_where_it_stopped(store, alice, e5, memory):
    await bulk_add(memory, alice, FACTS)
    gated = Gated(e5)
    second = Second(store, gated, batch_size=3)
    second.fill_later(alice.user_id)
    second.fill_later(alice.user_id)  # asked again while it runs: one filling, not two at once
    while gated.batches < 1:
        await asyncio.sleep(0.01)
    await second.close()  # the first batch was still being embedded
    assert e5.model_name not in await store.vector_models(alice.user_id)

    gated.gate.set()
    assert await Second(store, gated, batch_size=3).fill(alice.user_id) == len(FACTS)
    assert gated.batches == 1 + 3  # the stopped batch, then three of three, three and two
    assert await Second(store, gated).fill(alice.user_id) == 0  # nothing left


async def test_a_failing_second_model_leaves_recall_as_the_first_embedder_gives_it(
    store, embedder, settings, clock, alice, e5, caplog
):
    broken = Gated(e5, fail=True)
    memory = Core(store, embedder, None, settings=settings, clock=clock, second=broken).memory
    await bulk_add(memory, alice, FACTS)
    caplog.set_level(logging.ERROR)
    question = "Which instrument do I play?"
    # the filling it asks for fails: logged, nothing half-written
    _, rows = await memory.recaller.candidates(alice, question)
    await memory.recaller.second.settled()
    assert "filling in" in caplog.text and e5.model_name not in await store.vector_models(alice.user_id)
    assert rows[:, len(FEATURES) :].tolist() == rows[:, [0, 2, 3]].tolist()
    # every vector in place, but the model fails on the question: ranked without it
    assert await Second(store, e5).fill(alice.user_id) == len(FACTS)
    _, rows = await memory.recaller.candidates(alice, question)
    assert rows[:, len(FEATURES) :].tolist() == rows[:, [0, 2, 3]].tolist()
    assert "was left out of a recall" in caplog.text
    assert texts(await memory.recall(question, alice))[0].startswith("I play the cello")


class Closed(ProjectedEmbedder):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_without_a_model_trained_on_its_columns_a_second_embedder_is_not_read(
    memory, store, embedder, clock
):
    other = Second(memory.store, ProjectedEmbedder(embedder))  # no ranker-projected-64.json ships
    recaller = Recaller(memory.store, embedder, memory.settings.recall, memory.clock, second=other)
    assert recaller.second is None and recaller.ranker is shipped()
    # with fusion it is not read either, and closing the memory still closes it
    fusing = Settings(recall={"ranker": "rrf"})
    model = Closed(embedder, model_name="multilingual-e5-small-q4")
    rrf = Core(store, embedder, None, settings=fusing, clock=clock, second=model).memory
    assert rrf.recaller.second is None and rrf.recaller.ranker is None
    await rrf.close()
    assert model.closed == 1


def test_the_second_embedder_reads_beside_the_local_minilm_only(monkeypatch):
    assert build_second(Settings()) is None
    monkeypatch.setenv("MNEMO_EMBED_SECOND", "multilingual-e5")
    assert Settings().embed_second == "multilingual-e5"
    assert isinstance(build_second(Settings()), CoalescingEmbedder)  # built, not loaded
    with pytest.raises(ValidationError, match="beside the local all-MiniLM-L6-v2 only"):
        Settings(embed_local="multilingual-e5")
    with pytest.raises(ValidationError, match="beside the local all-MiniLM-L6-v2 only"):
        Settings(embed_base_url="http://127.0.0.1:9/v1", embed_model="m")
    monkeypatch.setenv("MNEMO_EMBED_SECOND", "minilm")
    with pytest.raises(ValueError, match="embed_second"):
        Settings()


async def test_a_candidate_without_a_second_vector_leaves_every_candidate_to_the_first_embedder(
    paired, alice, e5
):
    await bulk_add(paired, alice, FACTS)
    await paired.recaller.candidates(alice, "music")
    await paired.recaller.second.settled()
    await paired.add(alice, "I play the viola in a string quartet")
    # the new fact has no e5 vector yet: the ranker reads all of them as MiniLM saw them
    hits, rows = await paired.recaller.candidates(alice, "Which instrument do I play?")
    assert any("viola" in h.fact.text for h in hits)
    assert rows[:, len(FEATURES) :].tolist() == rows[:, [0, 2, 3]].tolist()
    await paired.recaller.second.settled()
    _, rows = await paired.recaller.candidates(alice, "Which instrument do I play?")
    assert rows[:, len(FEATURES) :].tolist() != rows[:, [0, 2, 3]].tolist()


async def test_a_recall_waits_for_a_busy_second_model_only_so_long(
    store, embedder, settings, clock, alice, e5, monkeypatch
):
    monkeypatch.setattr(recall_module, "QUESTION_WAIT", 0.05)
    slow = Gated(e5, slow_questions=True)  # its question waits for the gate, which stays shut
    memory = Core(store, embedder, None, settings=settings, clock=clock, second=slow).memory
    await bulk_add(memory, alice, FACTS)
    assert await Second(store, e5).fill(alice.user_id) == len(FACTS)
    _, rows = await asyncio.wait_for(memory.recaller.candidates(alice, "Which instrument do I play?"), 30)
    assert rows[:, len(FEATURES) :].tolist() == rows[:, [0, 2, 3]].tolist()
    slow.gate.set()  # the model answers again: the next recall reads it
    monkeypatch.setattr(recall_module, "QUESTION_WAIT", 60.0)  # however long loading it takes here
    _, rows = await memory.recaller.candidates(alice, "Which instrument do I play?")
    assert rows[:, len(FEATURES) :].tolist() != rows[:, [0, 2, 3]].tolist()
    await memory.recaller.second.close()


@pytest.mark.parametrize("question", ["", "   ", "\ufffd cello 😀", "cello " * 5000])
async def test_an_empty_odd_or_huge_question_is_recalled_with_the_second_embedder_on(paired, alice, question):
    await bulk_add(paired, alice, FACTS)
    await paired.recaller.candidates(alice, "music")
    await paired.recaller.second.settled()  # every vector in place: only the question decides
    hits, rows = await paired.recaller.candidates(alice, question)
    assert rows.shape == (len(hits), len(FEATURES) + len(SECOND))
    if not question.strip():  # nothing to embed: read as the first embedder saw it
        assert rows[:, len(FEATURES) :].tolist() == rows[:, [0, 2, 3]].tolist()
    else:
        assert "I play the cello in an amateur orchestra" in texts(await paired.recall(question, alice))
