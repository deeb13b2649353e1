"""The Memory methods the HTTP API leans on: one-step updates, the person's own search,
users with their first key, key revocation, and agents seen only by their owner."""

from __future__ import annotations

import dataclasses

import pytest

from mnemo import keys
from mnemo.domain import Action, Category, Conflict, InvalidInput, NotFound, Scope
from tests.helpers import texts


async def test_update_changes_text_category_and_pin_in_one_step(memory, alice):
    fact = await memory.add(alice, "I work at Acme")
    updated = await memory.update(
        alice, fact.id, version=1, text="I work at Acme Labs", category=Category.IDENTITY, pinned=True
    )
    assert (updated.id, updated.created_at, updated.version) == (fact.id, fact.created_at, 3)
    assert (updated.text, updated.category, updated.pinned) == (
        "I work at Acme Labs",
        Category.IDENTITY,
        True,
    )
    assert [e.action for e in await memory.history(alice, fact.id)] == [
        Action.CREATE,
        Action.EDIT,
        Action.PIN,
    ]


async def test_update_with_nothing_new_writes_nothing_and_a_stale_one_changes_nothing(memory, alice):
    fact = await memory.add(alice, "I work at Acme")
    assert await memory.update(alice, fact.id, version=1, text="I work at Acme", pinned=False) == fact
    assert len(await memory.history(alice, fact.id)) == 1
    await memory.update(alice, fact.id, version=1, category=Category.IDENTITY)
    with pytest.raises(Conflict):
        await memory.update(alice, fact.id, version=1, text="I work at Initech", pinned=True)
    current = await memory.get(alice, fact.id)
    assert (current.text, current.pinned, current.version) == ("I work at Acme", False, 2)
    # a category change keeps the vector: recall still finds it by meaning
    assert texts(await memory.recall("employer", alice, arms=("semantic",))) == ["I work at Acme"]


async def test_purge_can_name_the_version_it_saw(memory, alice):
    fact = await memory.add(alice, "My PIN is 4321")
    await memory.pin(alice, fact.id)
    with pytest.raises(Conflict):
        await memory.purge(alice, fact.id, version=1)
    purged, _ = await memory.purge(alice, fact.id, version=2)
    assert purged.purged


async def test_the_persons_search_is_not_gated_by_the_switch(memory, alice):
    await memory.add(alice, "I live in Lisbon")
    await memory.add(alice, "I have a cat named Miso")
    await memory.accounts.set_user_switch(alice.user_id, False)
    assert await memory.recall("Lisbon", alice) == []
    found = await memory.search("which city, Lisbon?", Scope(alice.user_id, all_agents=True))
    assert texts(found)[0] == "I live in Lisbon"
    assert set(found[0].reasons) <= {"semantic", "lexical"}


async def test_create_user_gives_a_first_key_and_refuses_a_taken_name(memory):
    user, key, token = await memory.accounts.create_user(" bob ")
    assert user.name == "bob" and key.user_id == user.id
    assert (await memory.accounts.authenticate(token)).id == user.id
    with pytest.raises(Conflict):
        await memory.accounts.create_user("bob")
    with pytest.raises(InvalidInput):
        await memory.accounts.create_user("  ")
    await memory.accounts.revoke_api_key(user.id, key.id)
    assert await memory.accounts.authenticate(token) is None
    assert (await memory.accounts.api_keys(user.id))[0].revoked_at is not None


async def test_keys_and_agents_answer_only_their_owner(memory, alice, bob):
    key, _ = await memory.accounts.create_api_key(alice.user_id, "laptop")
    with pytest.raises(NotFound):
        await memory.accounts.revoke_api_key(bob.user_id, key.id)
    agent = await memory.accounts.create_agent(alice.user_id, "coach")
    assert (await memory.accounts.agent(alice.user_id, agent.id)).name == "coach"
    with pytest.raises(NotFound):
        await memory.accounts.agent(bob.user_id, agent.id)
    assert await memory.events(bob.user_id) == []


async def test_an_api_key_id_is_one_key_across_users(memory, alice, bob):
    """Keys are keyed (user_id, id), but a request names its key by id alone: an id another
    person's key holds is refused, and that key still answers its token."""
    key, token = await memory.accounts.create_api_key(alice.user_id, "laptop")
    clash, _ = keys.new_key(bob.user_id, "phone", memory.clock())
    with pytest.raises(Conflict):
        await memory.store.add_api_key(dataclasses.replace(clash, id=key.id))
    assert await memory.accounts.api_keys(bob.user_id) == []
    assert (await memory.accounts.authenticate(token)).id == alice.user_id
