"""The time arm: a query that names a time brings the facts said, or become true, then;
a query that names none is ranked exactly as without the arm."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.domain import Scope
from mnemo.recall.recaller import ARMS
from tests.helpers import bulk_add, texts, unrelated_facts

WITHOUT_TIME = tuple(a for a in ARMS if a != "time")


def at(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


def timed(hits) -> list[str]:
    """The texts the time arm found, in its order."""
    return [
        h.fact.text
        for h in sorted((h for h in hits if "time" in h.reasons), key=lambda h: h.reasons["time"].rank)
    ]


async def seed(memory, alice, bob, clock) -> None:
    """Purchases said in December and in February; a job said in March that began in February;
    Bob's February purchase; a February purchase Alice took back."""
    clock.now = at(2025, 12, 10)
    await bulk_add(memory, alice, unrelated_facts(60))
    await memory.add(alice, "I bought a blue kettle")
    clock.now = at(2026, 2, 12)
    await memory.add(alice, "I bought a red bicycle")
    await memory.add(bob, "I bought a green tent")
    taken_back = await memory.add(alice, "I bought a yellow canoe")
    await memory.retract(alice, taken_back.id, reason="I returned it")
    clock.now = at(2026, 3, 2)
    await memory.add(alice, "I started my new job at the bakery", valid_from=at(2026, 2, 2))
    clock.now = at(2026, 3, 20)  # past the recency window of every fact above


async def test_a_query_naming_a_time_brings_what_was_said_or_began_then(memory, alice, bob, clock):
    await seed(memory, alice, bob, clock)
    for hits in (
        await memory.recall("What did I buy last month?", alice),
        await memory.recall("What did I buy last month?", alice, as_of=clock()),
    ):
        by_text = {h.fact.text: h for h in hits}
        assert timed(hits)[0] == "I bought a red bicycle"
        assert "I bought a blue kettle" in by_text and "time" not in by_text["I bought a blue kettle"].reasons
        assert texts(hits).index("I bought a red bicycle") < texts(hits).index("I bought a blue kettle")
        assert "I bought a green tent" not in by_text  # Bob's
        assert "I bought a yellow canoe" not in by_text  # taken back
    # became true in February, said in March
    assert "I started my new job at the bakery" in timed(
        await memory.recall("What did I start last month?", alice)
    )


async def test_the_arm_is_fused_with_its_own_weight(memory, alice, bob, clock):
    await seed(memory, alice, bob, clock)
    memory.recaller.ranker = None  # the fallback, fusion, weighs each arm
    s = memory.recaller.settings
    hits = await memory.recall("What did I buy last month?", alice)
    bicycle = next(h for h in hits if h.fact.text == "I bought a red bicycle")
    expected = sum(s.weights[arm] / (s.rrf_k + r.rank) for arm, r in bicycle.reasons.items())
    assert "time" in bicycle.reasons and abs(bicycle.score - expected) < 1e-12
    heavier = s.model_copy(update={"weights": {**s.weights, "time": 3.0}})
    memory.recaller.settings = heavier
    again = next(
        h for h in await memory.recall("What did I buy last month?", alice) if h.fact.id == bicycle.fact.id
    )
    assert again.score > bicycle.score


async def test_a_query_naming_no_time_is_ranked_as_without_the_arm(memory, alice, bob, clock):
    await seed(memory, alice, bob, clock)
    for query in ("What did I buy?", "Where do I work?", "bicycle", "May I see my purchases?"):
        for as_of in (None, clock()):
            with_arm = await memory.recall(query, alice, as_of=as_of)
            without = await memory.recall(query, alice, as_of=as_of, arms=WITHOUT_TIME)
            assert [(h.fact.id, h.score, dict(h.reasons)) for h in with_arm] == [
                (h.fact.id, h.score, dict(h.reasons)) for h in without
            ]
            assert with_arm and not any("time" in h.reasons for h in with_arm)


async def test_a_time_with_nothing_said_then_changes_nothing(memory, alice, bob, clock):
    await seed(memory, alice, bob, clock)
    query = "What did I buy in 2019?"
    with_arm = await memory.recall(query, alice)
    without = await memory.recall(query, alice, arms=WITHOUT_TIME)
    assert [(h.fact.id, h.score) for h in with_arm] == [(h.fact.id, h.score) for h in without]


async def test_the_window_is_read_against_the_time_asked_as_of(memory, alice, bob, clock):
    """As of 20 January, "last month" is December: the kettle, not the bicycle."""
    await seed(memory, alice, bob, clock)
    hits = await memory.recall("What did I buy last month?", alice, as_of=at(2026, 1, 20))
    assert "I bought a blue kettle" in timed(hits)
    assert "I bought a red bicycle" not in texts(hits)  # not yet said then


async def test_the_arm_keeps_to_the_agents_scope(memory, alice, clock):
    """A custom agent's time arm sees its own facts, never another agent's said in the window."""
    chef = Scope(alice.user_id, (await memory.accounts.create_agent(alice.user_id, "Chef")).id)
    accountant = Scope(alice.user_id, (await memory.accounts.create_agent(alice.user_id, "Accountant")).id)
    clock.now = at(2026, 2, 10)
    await memory.add(chef, "I bought a cast iron pan")
    await memory.add(accountant, "I bought shares in a bakery")
    clock.now = at(2026, 3, 20)
    for as_of in (None, clock()):
        hits = await memory.recall("What did I buy last month?", chef, as_of=as_of)
        assert timed(hits) == ["I bought a cast iron pan"]
        assert "I bought shares in a bakery" not in texts(hits)


async def test_the_window_holds_what_was_said_and_what_became_true_then_once_each_newest_said_first(
    memory, alice, clock
):
    """SearchStore.during merges its two searches (said in the window, became true in it): each
    fact once, those said last first, at most k, and nothing from outside the window."""
    clock.now = at(2026, 1, 20)
    await memory.add(alice, "I bought a lamp")  # said before the window
    clock.now = at(2026, 2, 10)
    await memory.add(alice, "I bought a rug")  # said in the window
    await memory.add(alice, "I moved to Porto", valid_from=at(2026, 2, 5))  # both
    clock.now = at(2026, 2, 20)
    await memory.add(alice, "I bought a chair")  # said in the window, later
    clock.now = at(2026, 3, 5)
    await memory.add(alice, "I joined a choir", valid_from=at(2026, 2, 15))  # became true in it
    await memory.add(alice, "I sold my car", valid_from=at(2026, 3, 1))  # neither

    window = (at(2026, 2, 1), at(2026, 3, 1))
    found = [f.text for f in await memory.store.during(alice, *window, 10)]
    assert found == ["I joined a choir", "I bought a chair", "I moved to Porto", "I bought a rug"]
    assert [f.text for f in await memory.store.during(alice, *window, 2)] == found[:2]
