"""Recall: the arms, fusion with reasons, as_of, pinned facts, the budget, injection."""

from __future__ import annotations

import math

from mnemo.domain import Scope
from mnemo.recall.fuse import estimate_tokens
from mnemo.recall.recaller import fused
from mnemo.recall.render import inject, render
from tests.helpers import bulk_add, texts, unrelated_facts


async def test_lexical_arm_finds_a_rare_token_the_embedder_misses(memory, alice, clock):
    await bulk_add(memory, alice, unrelated_facts(300))
    await memory.add(alice, "My niece is called Zephyrine")
    clock.advance(days=30)  # outside the recency window: only relevance can find it
    query = "I want to repair a telescope with Zephyrine"

    semantic_only = await memory.recall(query, alice, arms=("semantic",))
    assert "My niece is called Zephyrine" not in texts(semantic_only)
    lexical_only = await memory.recall(query, alice, arms=("lexical",))
    assert texts(lexical_only)[0] == "My niece is called Zephyrine"
    hits = await memory.recall(query, alice)
    found = next(h for h in hits if h.fact.text == "My niece is called Zephyrine")
    # the learned ranker's semantic arm reaches past 20, where the embedder puts it
    assert found.reasons["lexical"].rank == 1 and found.reasons["semantic"].rank > 20
    memory.recaller.ranker = None  # and fusion's semantic arm stops at 20
    found = next(
        h for h in await memory.recall(query, alice) if h.fact.text == "My niece is called Zephyrine"
    )
    assert found.reasons["lexical"].rank == 1 and "semantic" not in found.reasons


async def test_semantic_arm_finds_a_paraphrase(memory, alice, clock):
    await bulk_add(memory, alice, unrelated_facts(300))
    await memory.add(alice, "I am allergic to peanuts")
    clock.advance(days=30)
    hits = await memory.recall("what food must I avoid?", alice)
    assert texts(hits)[0] == "I am allergic to peanuts"
    assert "semantic" in hits[0].reasons and "lexical" not in hits[0].reasons


async def test_topic_arm_runs_for_a_query_that_names_someone(memory, alice, clock):
    await bulk_add(memory, alice, unrelated_facts(100))
    await memory.add(alice, "Swimming in the cold lake calms my neighbour Lena down")
    clock.advance(days=30)
    named = await memory.recall("What calms Lena down?", alice)
    assert texts(named)[0] == "Swimming in the cold lake calms my neighbour Lena down"
    assert {"semantic", "topic"} <= set(named[0].reasons)
    past = await memory.recall("What calms Lena down?", alice, as_of=clock())
    assert texts(past)[0] == texts(named)[0] and {"semantic", "topic"} <= set(past[0].reasons)
    unnamed = await memory.recall("what calms my neighbour down?", alice)
    assert not any("topic" in h.reasons for h in unnamed)
    # the fallback, fusion: the two views share the semantic weight, so that a named person
    # does not double the embedder's say
    memory.recaller.ranker = None
    named = await memory.recall("What calms Lena down?", alice)
    s = memory.recaller.settings
    dense = {"semantic": 1 - s.topic_share, "topic": s.topic_share}
    expected = sum(
        s.weights["semantic"] * dense[arm] / (s.rrf_k + r.rank)
        if arm in dense
        else s.weights[arm] / (s.rrf_k + r.rank)
        for arm, r in named[0].reasons.items()
    )
    assert abs(named[0].score - expected) < 1e-12


async def test_recall_is_the_fusion_of_each_arms_list(memory, alice, bob, clock):
    await bulk_add(memory, alice, unrelated_facts(60))
    await memory.add(alice, "My neighbour Lena repairs telescopes")
    await memory.add(bob, "Bob's telescope is from Lena")
    clock.advance(days=2)
    await memory.add(alice, "I bought a red kayak")
    query = "Who repairs a telescope for Lena?"
    ranked = await memory.recaller.ranked(alice, query)
    assert set(ranked) == {"pinned", "recency", "semantic", "topic", "lexical"}
    assert ranked["lexical"][0][0].text == "My neighbour Lena repairs telescopes"
    assert ranked["recency"][0][0].text == "I bought a red kayak"
    every = [f for hits in ranked.values() for f, _ in hits]
    assert every and all(f.user_id == alice.user_id for f in every)  # bob's fact stays out
    memory.recaller.ranker = None  # the fallback
    hits = await memory.recall(query, alice, limit=len(every))
    assert [(h.fact.id, h.score) for h in hits] == [
        (h.fact.id, h.score) for h in fused(ranked, memory.recaller.settings)
    ]
    past = await memory.recaller.ranked(alice, query, as_of=clock(), arms=("lexical",))
    assert list(past) == ["lexical"] and past["lexical"][0][0].text == "My neighbour Lena repairs telescopes"


async def test_recency_arm_brings_recent_facts_within_the_window(memory, alice, clock):
    await memory.add(alice, "I started a new job last week")
    clock.advance(days=8)
    await memory.add(alice, "I adopted a dog yesterday")
    hits = await memory.recall("zzz", alice)
    assert texts(hits) == ["I adopted a dog yesterday"]
    # the semantic arm returns it too, as it returns every candidate, but below the floor
    floor = memory.recaller.settings.semantic_floor
    assert "recency" in hits[0].reasons and hits[0].reasons["semantic"].score < floor


async def test_as_of_returns_what_was_believed_then(memory, alice, clock):
    berlin = await memory.add(alice, "I live in Berlin")
    before_move = clock.advance(days=10)
    clock.advance(days=10)
    munich = await memory.add(alice, "I live in Munich")
    await memory.retract(alice, berlin.id, reason="moved")

    now_hits = texts(await memory.recall("where do I live?", alice))
    past_hits = texts(await memory.recall("where do I live?", alice, as_of=before_move))
    assert "I live in Munich" in now_hits and "I live in Berlin" not in now_hits
    assert past_hits == ["I live in Berlin"]
    assert munich.id not in [h.fact.id for h in await memory.recall("Munich", alice, as_of=before_move)]


async def test_as_of_respects_scope(memory, alice, bob, clock):
    await memory.add(bob, "I live in Oslo")
    await memory.add(alice, "I live in Lisbon")
    later = clock.advance(days=1)
    assert texts(await memory.recall("where do I live", alice, as_of=later)) == ["I live in Lisbon"]


async def test_pinned_facts_always_come_back(memory, alice, clock):
    await memory.add(alice, "Call me Ali, never Alice", pinned=True)
    await bulk_add(memory, alice, unrelated_facts(50))
    clock.advance(days=30)
    hits = await memory.recall("telescope", alice, limit=2)
    assert texts(hits)[0] == "Call me Ali, never Alice" and hits[0].pinned
    assert len(hits) == 2 and "telescope" in hits[1].fact.text
    # even when the budget is smaller than the pinned set
    assert texts(await memory.recall("telescope", alice, limit=0)) == ["Call me Ali, never Alice"]


async def test_the_budget_holds(memory, alice):
    await bulk_add(memory, alice, unrelated_facts(100))
    hits = await memory.recall("telescope", alice, limit=7)
    assert len(hits) == 7
    memory.recaller.settings.max_tokens = 60
    hits = await memory.recall("telescope", alice)
    assert sum(estimate_tokens(h.fact.text) for h in hits) <= 60 and hits


async def test_every_hit_says_why(memory, alice):
    await memory.add(alice, "I own a telescope")
    hit = (await memory.recall("telescope", alice))[0]
    assert {"semantic", "lexical", "recency"} <= set(hit.reasons)
    assert all(r.rank >= 1 for r in hit.reasons.values()) and math.isfinite(hit.score)


async def test_the_block_can_go_just_before_the_latest_user_message(memory, alice):
    await memory.add(alice, "I am allergic to peanuts")
    hits = await memory.recall("peanuts", alice)
    block = render(hits, "before_user")
    assert "I am allergic to peanuts" in block and "2026-03-01" in block
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "suggest a snack"},
    ]
    out = inject(messages, block, "before_user")
    assert out[:3] == messages[:3]
    assert out[3] == {"role": "user", "content": block} and out[4] == messages[3]
    assert inject(messages, render([]), "before_user") == messages


async def test_the_arms_asked_together_answer_as_each_search_alone(memory, alice, clock):
    """SearchStore.arms: one read of all of a recall's searches (one trip on SQLite, a
    connection each on PostgreSQL) answers each as the method it names answers alone."""
    from datetime import timedelta

    from mnemo.store.base import Ask

    await bulk_add(memory, alice, unrelated_facts(80))
    pin = await memory.add(alice, "My niece is called Zephyrine")
    await memory.pin(alice, pin.id)
    store, model = memory.store, memory.embedder.model_name
    now = clock()
    vector = (await memory.embedder.embed_queries(["a telescope for Zephyrine"]))[0]
    asks = {
        "pinned": Ask("pinned"),
        "recency": Ask("recent", (now - timedelta(days=7), 10)),
        "semantic": Ask("nearest", (vector, model, 15)),
        "lexical": Ask("lexical", ("a telescope for Zephyrine", 15)),
        "time": Ask("during", (now - timedelta(days=1), now + timedelta(days=1), 10)),
    }
    timed: dict[str, float] = {}
    together = await store.arms(alice, asks, timed.__setitem__)

    assert together == {
        "pinned": await store.pinned(alice),
        "recency": await store.recent(alice, now - timedelta(days=7), 10),
        "semantic": await store.nearest(alice, vector, model, 15),
        "lexical": await store.lexical(alice, "a telescope for Zephyrine", 15),
        "time": await store.during(alice, now - timedelta(days=1), now + timedelta(days=1), 10),
    }
    assert [f.text for f in together["pinned"]] == ["My niece is called Zephyrine"]
    assert len(together["semantic"]) == 15
    assert together["lexical"][0].fact.text == "My niece is called Zephyrine"
    assert set(timed) == set(asks) and all(seconds >= 0 for seconds in timed.values())


async def test_recall_orders_every_arms_candidates_by_the_shipped_model(memory, alice, clock):
    await bulk_add(memory, alice, unrelated_facts(150))
    await memory.add(alice, "My neighbour Oskar mends old barometers")
    clock.advance(days=3)
    query = "Who mends my barometers?"
    ranker = memory.recaller.ranker
    assert ranker is not None and memory.recaller.settings.ranker == "learned"
    hits, rows = await memory.recaller.candidates(alice, query)
    # the semantic arm to candidate_k, deeper than fusion's semantic_k
    s = memory.recaller.settings
    assert (
        max(h.reasons["semantic"].rank for h in hits if "semantic" in h.reasons)
        == s.candidate_k
        > s.semantic_k
    )
    expected = [h.fact.id for h in ranker.order(hits, rows)]
    recalled = await memory.recall(query, alice, limit=10)
    assert recalled[0].fact.text == "My neighbour Oskar mends old barometers"
    ids = [h.fact.id for h in recalled]
    assert ids == [i for i in expected if i in ids] and len(ids) == 10
    assert [h.score for h in recalled] == sorted((h.score for h in recalled), reverse=True)


async def test_the_settings_can_ask_for_fusion_instead(settings, alice):
    from mnemo.recall.recaller import Recaller

    fusing = settings.recall.model_copy(update={"ranker": "rrf"})
    assert Recaller(None, None, fusing, lambda: None).ranker is None  # type: ignore[arg-type]
    assert Recaller(None, None, settings.recall, lambda: None).ranker is not None  # type: ignore[arg-type]


async def test_each_part_of_a_question_about_several_things_is_searched_for(memory, alice, clock):
    await bulk_add(memory, alice, unrelated_facts(200))
    await memory.add(alice, "I set up the smart thermostat in the hallway")
    await memory.add(alice, "The mesh network system covers the whole flat now")
    clock.advance(days=30)
    question = "Which did I set up first, the smart thermostat or the mesh network system?"
    ranked = await memory.recaller.ranked(alice, question, wide=True)
    found = {f.text for f, _ in ranked["parts"][:2]}
    assert found == {
        "I set up the smart thermostat in the hallway",
        "The mesh network system covers the whole flat now",
    }
    assert all(a >= b for (_, a), (_, b) in zip(ranked["parts"], ranked["parts"][1:], strict=False))
    # fusion, the fallback, runs no such arm; nor does a question about one thing
    assert "parts" not in await memory.recaller.ranked(alice, question)
    assert "parts" not in await memory.recaller.ranked(alice, "Where is the thermostat?", wide=True)
    past = await memory.recaller.ranked(alice, question, as_of=clock(), wide=True)
    assert [f.id for f, _ in past["parts"][:2]] == [f.id for f, _ in ranked["parts"][:2]]


async def test_the_learned_ranker_takes_any_query(memory, alice, bob, clock):
    """Queries at the edges: empty, only stop words, very long, many parts,
    another language; a person with one fact and one with none; nothing raises, and another
    person's facts never come back."""
    await memory.add(alice, "I keep bees on the roof")
    await memory.add(bob, "Bob keeps bees too")
    clock.advance(days=2)
    queries = [
        "",
        "   ",
        "the and of",
        "bees " * 2000,
        ", ".join(["bees"] * 12) + " or roof",
        "¿Dónde están mis abejas y mi tejado?",
        "🐝🐝🐝",
    ]
    for query in queries:
        for as_of in (None, clock()):
            hits = await memory.recall(query, alice, as_of=as_of)
            assert all(h.fact.user_id == alice.user_id for h in hits)
    assert texts(await memory.recall("Where are my bees?", alice)) == ["I keep bees on the roof"]
    nobody = Scope((await memory.store.ensure_user("nobody")).id)
    assert await memory.recall("Where are my bees, or my roof?", nobody) == []


async def test_the_first_question_in_another_language_loads_its_identifier_off_the_event_loop(
    memory, alice, monkeypatch
):
    """The language identifier loads on the first question that may be in another language
    (about a second, once per process): in a thread, while the event loop serves everyone
    else. The load is made slow here, and the loop's longest pause is measured meanwhile."""
    import asyncio
    import functools
    import time

    from mnemo import language

    await memory.add(alice, "Meine Schwester wohnt in Porto")
    real = language._loaded.__wrapped__

    @functools.cache
    def slow_load():
        time.sleep(0.6)
        return real()

    monkeypatch.setattr(language, "_loaded", slow_load)
    assert not language.model_loaded() and language.asks_the_model("Wo wohnt meine Schwester?")
    pauses = []

    async def tick() -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            pauses.append(time.perf_counter() - t)

    ticker = asyncio.create_task(tick())
    try:
        hits = await memory.recall("Wo wohnt meine Schwester?", alice)
    finally:
        ticker.cancel()
    assert texts(hits) == ["Meine Schwester wohnt in Porto"]
    assert language.model_loaded() and len(pauses) > 20
    assert max(pauses) < 0.3, f"the event loop stopped for {max(pauses):.2f} s"
