"""Khoj parity on scope, plus private agents and the opt-in to the default agent's facts.

Every negative case seeds the facts that must stay out and asserts on their text.
"""

from __future__ import annotations

import pytest

from mnemo.domain import NotFound, Scope
from tests.helpers import texts


async def seed(memory, scope: Scope, text: str) -> None:
    await memory.add(scope, text)


async def everything(memory, scope: Scope) -> list[str]:
    """What a scope can read through every path: list and recall."""
    listed = texts(await memory.list(scope, limit=1000))
    recalled = texts(await memory.recall("I my favourite", scope, limit=100))
    return sorted(set(listed) | set(recalled))


async def test_default_agent_sees_all_of_the_users_facts(memory, alice):
    accountant = await memory.accounts.create_agent(alice.user_id, "Accountant")
    await seed(memory, alice, "My favourite colour is green")
    await seed(memory, Scope(alice.user_id, accountant.id), "My tax number is 123-45")

    seen = await everything(memory, alice)
    assert seen == ["My favourite colour is green", "My tax number is 123-45"]


async def test_no_agent_is_the_default_agent(memory, alice):
    await seed(memory, alice, "My favourite tea is sencha")
    assert Scope(alice.user_id) == Scope(alice.user_id, None)
    assert "My favourite tea is sencha" in await everything(memory, Scope(alice.user_id, None))


async def test_custom_agent_sees_only_its_own(memory, alice):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef")
    accountant = await memory.accounts.create_agent(alice.user_id, "Accountant")
    await seed(memory, alice, "My favourite colour is green")
    await seed(memory, Scope(alice.user_id, chef.id), "My favourite spice is cumin")
    await seed(memory, Scope(alice.user_id, accountant.id), "My tax number is 123-45")

    assert await everything(memory, Scope(alice.user_id, chef.id)) == ["My favourite spice is cumin"]


async def test_two_custom_agents_never_see_each_other(memory, alice):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef")
    accountant = await memory.accounts.create_agent(alice.user_id, "Accountant")
    await seed(memory, Scope(alice.user_id, chef.id), "My favourite spice is cumin")
    await seed(memory, Scope(alice.user_id, accountant.id), "My tax number is 123-45")

    chef_sees = await everything(memory, Scope(alice.user_id, chef.id))
    accountant_sees = await everything(memory, Scope(alice.user_id, accountant.id))
    assert "My tax number is 123-45" not in chef_sees
    assert "My favourite spice is cumin" not in accountant_sees
    assert chef_sees == ["My favourite spice is cumin"]
    assert accountant_sees == ["My tax number is 123-45"]


async def test_users_are_isolated(memory, alice, bob):
    await seed(memory, alice, "My favourite city is Lisbon")
    await seed(memory, bob, "My favourite city is Oslo")

    assert await everything(memory, alice) == ["My favourite city is Lisbon"]
    assert await everything(memory, bob) == ["My favourite city is Oslo"]


async def test_another_users_fact_id_is_not_found(memory, alice, bob):
    await memory.add(alice, "My favourite city is Lisbon")
    secret = (await memory.list(alice))[0]
    for call in (
        memory.get(bob, secret.id),
        memory.history(bob, secret.id),
        memory.edit(bob, secret.id, "My favourite city is Oslo"),
        memory.retract(bob, secret.id),
        memory.purge(bob, secret.id),
    ):
        with pytest.raises(NotFound):
            await call
    assert texts(await memory.list(alice)) == ["My favourite city is Lisbon"]


async def test_saving_under_the_default_agent_stores_no_agent(memory, alice):
    fact = await memory.add(alice, "My favourite tea is sencha")
    assert fact.agent_id is None
    stored = await memory.get(Scope(alice.user_id, all_agents=True), fact.id)
    assert stored.agent_id is None and stored.user_id == alice.user_id


async def test_saving_under_a_custom_agent_keeps_that_agent(memory, alice):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef")
    fact = await memory.add(Scope(alice.user_id, chef.id), "My favourite spice is cumin")
    assert fact.agent_id == chef.id and fact.user_id == alice.user_id


async def test_private_agent_is_hidden_from_the_default_agent(memory, alice):
    therapist = await memory.accounts.create_agent(alice.user_id, "Therapist", private=True)
    await seed(memory, alice, "My favourite colour is green")
    await seed(memory, Scope(alice.user_id, therapist.id), "I am anxious about my exams")

    assert await everything(memory, alice) == ["My favourite colour is green"]
    assert await everything(memory, Scope(alice.user_id, therapist.id)) == ["I am anxious about my exams"]
    # the person's own view still holds everything they own
    owner = texts(await memory.list(Scope(alice.user_id, all_agents=True)))
    assert sorted(owner) == ["I am anxious about my exams", "My favourite colour is green"]


async def test_custom_agent_may_opt_in_to_the_default_agents_facts(memory, alice):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef", reads_default=True)
    accountant = await memory.accounts.create_agent(alice.user_id, "Accountant")
    await seed(memory, alice, "I am vegetarian")
    await seed(memory, Scope(alice.user_id, accountant.id), "My tax number is 123-45")
    await seed(memory, Scope(alice.user_id, chef.id), "My favourite spice is cumin")

    assert await everything(memory, Scope(alice.user_id, chef.id)) == [
        "I am vegetarian",
        "My favourite spice is cumin",
    ]


async def test_an_unknown_agent_reads_nothing(memory, alice, bob):
    bobs_agent = await memory.accounts.create_agent(bob.user_id, "Chef")
    await seed(memory, Scope(bob.user_id, bobs_agent.id), "My favourite spice is cumin")
    with pytest.raises(NotFound):
        await memory.list(Scope(alice.user_id, bobs_agent.id))


def sql_log(store) -> list[str]:
    """Every statement the SQLite store runs from here on."""
    sent: list[str] = []
    store._conn.set_trace_callback(sent.append)
    return sent


@pytest.mark.backend("sqlite")
async def test_a_scope_with_its_agent_rule_decided_reads_no_agents_in_any_arm(memory, alice):
    """A caller that has the user's agents already (the chat proxy) decides the rule once and
    hands it down: no arm reads the agents again, and the rule still holds."""
    private = await memory.accounts.create_agent(alice.user_id, "Diary", private=True)
    await seed(memory, alice, "My favourite colour is green")
    await seed(memory, Scope(alice.user_id, private.id), "My favourite secret is the attic")
    decided = alice.visible_to(await memory.accounts.agents(alice.user_id))
    sent = sql_log(memory.store)
    for as_of in (None, memory.clock()):
        hits = texts(await memory.recall("my favourite colour or secret", decided, limit=10, as_of=as_of))
        assert hits == ["My favourite colour is green"]
    assert not [s for s in sent if "FROM agents" in s]


@pytest.mark.backend("sqlite")
async def test_a_proxied_turn_decides_memory_and_the_agent_rule_once(memory, alice, settings):
    """The chat proxy reads the caller's agents and the memory switch once for a whole turn
    (recall, the reply, storing it), and reads the user's row no more (it came with the call)
    but for the recall log's own switch, read in the transaction that records the recall so
    that switching it off meanwhile leaves nothing behind."""
    from mnemo.proxy.prepare import prepare

    user = await memory.accounts.user("alice")
    await seed(memory, alice, "My favourite colour is green")
    sent = sql_log(memory.store)
    body = {"model": "m", "messages": [{"role": "user", "content": "what is my favourite colour?"}]}
    prepared = await prepare(memory, memory.accounts, settings, user, body, {})
    turn = prepared.turn("Green.")
    assert turn is not None and prepared.memory_on
    assert await memory.submit(turn, memory_on=prepared.memory_on, gate=prepared.gate) is not None
    assert [h.fact.text for h in prepared.hits] == ["My favourite colour is green"]
    await memory.write_recall_log()  # after the reply
    assert sum("FROM agents" in s for s in sent) == 1
    read_users = [s.split(" WHERE")[0] for s in sent if "FROM users" in s]
    assert read_users == ["SELECT record_recalls, recalls_off_at FROM users"]
    assert sum("FROM settings" in s for s in sent) == 1  # the server's memory mode


@pytest.mark.backend("sqlite")
@pytest.mark.parametrize("face", ["api", "mcp"])
async def test_a_search_by_the_api_or_mcp_decides_memory_and_the_agent_rule_once(memory, alice, face):
    """POST /v1/memories/search and the MCP recall tool read the caller's agents and the memory
    switch once per call, as the proxy does, and a private agent's fact stays out."""
    from mnemo.mcp.schemas import RecallArgs
    from mnemo.mcp.tools import TOOLS, Caller, recall
    from mnemo.schemas.facts import SearchRequest
    from mnemo.server.routes.memories import search_memories

    user = await memory.accounts.user("alice")
    private = await memory.accounts.create_agent(alice.user_id, "Diary", private=True)
    await seed(memory, alice, "My favourite colour is green")
    await seed(memory, Scope(alice.user_id, private.id), "My favourite secret is the attic")
    sent = sql_log(memory.store)
    query = "my favourite colour or secret"
    if face == "api":
        found = await search_memories(memory, memory.accounts, user, SearchRequest(query=query, limit=10))
        hits, on = [h.fact.text for h in found.items], found.enable_memory
    else:
        tool = next(t for t in TOOLS if t.run is recall)
        answer = await tool(Caller(memory, memory.accounts, user), RecallArgs(query=query, limit=10))
        hits, on = [m.text for m in answer.memories], answer.memory_enabled
    assert on and hits == ["My favourite colour is green"]
    assert sum("FROM agents" in s for s in sent) == 1
    assert sum("FROM settings" in s for s in sent) == 1  # the server's memory mode
