"""Listing by status, category and pin, and counting what such a list pages through: the count
agrees with the list, follows the agent rule, and never counts another person's facts."""

from __future__ import annotations

from mnemo.domain import Category, Scope, Status
from tests.helpers import texts


async def both(memory, scope: Scope, **filters) -> tuple[int, list[str]]:
    """The count and every listed text, for the same filters."""
    listed = await memory.list(scope, limit=1000, **filters)
    return await memory.count(scope, **filters), sorted(texts(listed))


async def test_nothing_counts_zero(memory, alice):
    assert await both(memory, alice) == (0, [])
    assert await both(memory, alice, statuses=None, category=Category.PLAN, pinned=True) == (0, [])


async def test_the_count_agrees_with_the_list_for_every_filter(memory, alice, bob):
    await memory.add(alice, "I am allergic to peanuts", category=Category.IDENTITY, pinned=True)
    await memory.add(alice, "I live in Lisbon", category=Category.IDENTITY)
    await memory.add(alice, "Café com leite, sempre 🙂", category=Category.PREFERENCE)
    old = await memory.add(alice, "I play the cello", category=Category.PREFERENCE, pinned=True)
    await memory.retract(alice, old.id)
    await memory.add(alice, "I might move to Porto", held=True)
    # what must stay out: another person's facts in every status, category and pin
    await memory.add(bob, "Bob is allergic to peanuts", category=Category.IDENTITY, pinned=True)
    gone = await memory.add(bob, "Bob plays the cello", category=Category.PREFERENCE)
    await memory.retract(bob, gone.id)

    assert await both(memory, alice) == (
        3,
        ["Café com leite, sempre 🙂", "I am allergic to peanuts", "I live in Lisbon"],
    )
    assert await both(memory, alice, statuses=None) == (
        5,
        [
            "Café com leite, sempre 🙂",
            "I am allergic to peanuts",
            "I live in Lisbon",
            "I might move to Porto",
            "I play the cello",
        ],
    )
    assert await both(memory, alice, category=Category.IDENTITY) == (
        2,
        ["I am allergic to peanuts", "I live in Lisbon"],
    )
    assert await both(memory, alice, pinned=True) == (1, ["I am allergic to peanuts"])
    assert await both(memory, alice, pinned=False) == (2, ["Café com leite, sempre 🙂", "I live in Lisbon"])
    assert await both(memory, alice, statuses=(Status.RETRACTED,), pinned=True) == (1, ["I play the cello"])
    assert await both(memory, alice, statuses=(Status.CANDIDATE,)) == (1, ["I might move to Porto"])
    assert await both(
        memory, alice, statuses=(Status.ACTIVE, Status.RETRACTED), category=Category.PREFERENCE, pinned=False
    ) == (1, ["Café com leite, sempre 🙂"])
    assert await both(memory, bob, statuses=None) == (
        2,
        ["Bob is allergic to peanuts", "Bob plays the cello"],
    )


async def test_the_count_follows_the_agent_rule(memory, alice):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef")
    accountant = await memory.accounts.create_agent(alice.user_id, "Accountant", private=True)
    await memory.add(alice, "My favourite colour is green")
    await memory.add(Scope(alice.user_id, chef.id), "My favourite spice is cumin")
    await memory.add(Scope(alice.user_id, accountant.id), "My tax number is 123-45")

    assert await both(memory, Scope(alice.user_id, chef.id)) == (1, ["My favourite spice is cumin"])
    assert await both(memory, Scope(alice.user_id, accountant.id)) == (1, ["My tax number is 123-45"])
    everything = Scope(alice.user_id, all_agents=True)
    assert (await both(memory, everything))[0] == 3


async def test_a_count_runs_past_a_page(memory, alice):
    for i in range(60):
        await memory.add(alice, f"My locker number {i} is blue", pinned=i % 3 == 0)
    assert await memory.count(alice) == 60
    assert await memory.count(alice, pinned=True) == 20
    assert len(await memory.list(alice, limit=25, offset=50)) == 10
