"""Reindex: every fact gets a vector of the configured model beside its old one, in batches,
resumably; recall through the old model keeps working meanwhile; --prune drops the old."""

from __future__ import annotations

import pytest

from mnemo.batch.reindex import Reindex
from mnemo.domain import Scope
from mnemo.recall.recaller import Recaller
from tests.fakes.embedders import ProjectedEmbedder
from tests.helpers import bulk_add, texts

FACTS = [
    "I play the cello in a string quartet",
    "My sister Ana lives in Porto",
    "I am allergic to peanuts",
    "I grew up in Lyon",
    "I keep bees in my garden",
    "I run a marathon every spring",
    "I drive a green tractor",
]


class Interrupted(Exception):
    pass


@pytest.fixture
def other(embedder) -> ProjectedEmbedder:
    return ProjectedEmbedder(embedder)


async def semantic(memory, embedder, scope: Scope, query: str) -> list[str]:
    recaller = Recaller(memory.store, embedder, memory.settings.recall, memory.clock)
    return texts(await recaller.recall(scope, query, arms=("semantic",)))


@pytest.fixture
async def seeded(memory, alice, bob):
    await bulk_add(memory, alice, FACTS)
    await bulk_add(memory, bob, ["I drive a red tractor", "I have two cats"])
    return memory


async def test_reindex_interrupted_then_resumed(seeded, embedder, other, alice, bob):
    memory = seeded
    old = embedder.model_name

    def stop_after_first(user, n):
        raise Interrupted

    job = Reindex(memory.store, other, batch_size=3, progress=stop_after_first)
    users = await job.users(["alice"])
    with pytest.raises(Interrupted):
        await job.run(users)
    assert other.calls == [3]
    models = await memory.store.vector_models(alice.user_id)
    assert models == {old: len(FACTS), other.model_name: 3}

    # mid-run: the servers still on the old model recall as before
    assert "I am allergic to peanuts" in (await semantic(memory, embedder, alice, "peanut allergy"))[:3]

    report = await Reindex(memory.store, other, batch_size=3).run(await job.users(None))
    assert other.calls == [3, 3, 1, 2]  # alice's first batch was not embedded again; then bob's
    assert [(u.user, u.embedded, u.done) for u in report.users] == [("alice", 4, True), ("bob", 2, True)]
    for scope, n in ((alice, len(FACTS)), (bob, 2)):
        assert await memory.store.vector_models(scope.user_id) == {old: n, other.model_name: n}

    # the new model finds them; the old one still does
    assert "I am allergic to peanuts" in (await semantic(memory, other, alice, "peanut allergy"))[:3]
    assert "I am allergic to peanuts" in (await semantic(memory, embedder, alice, "peanut allergy"))[:3]
    assert await semantic(memory, other, bob, "peanut allergy") != []
    assert "I am allergic to peanuts" not in await semantic(memory, other, bob, "peanut allergy")

    # nothing left: a run does nothing
    calls = len(other.calls)  # (recall embedded the queries)
    again = await Reindex(memory.store, other).run(await job.users(None))
    assert again.embedded == 0 and len(other.calls) == calls

    pruned = await Reindex(memory.store, other).run(await job.users(["alice"]), prune=True)
    assert pruned.users[0].pruned == len(FACTS)
    assert await memory.store.vector_models(alice.user_id) == {other.model_name: len(FACTS)}
    assert await semantic(memory, embedder, alice, "peanut allergy") == []
    assert "I am allergic to peanuts" in (await semantic(memory, other, alice, "peanut allergy"))[:3]
    assert await memory.store.vector_models(bob.user_id) == {old: 2, other.model_name: 2}


async def test_edited_fact_loses_stale_vectors(seeded, embedder, other, alice):
    memory = seeded
    await Reindex(memory.store, other).run(await Reindex(memory.store, other).users(["alice"]))
    fact = next(
        f for f in await memory.store.list_facts(Scope(alice.user_id, all_agents=True)) if "Lyon" in f.text
    )
    await memory.edit(alice, fact.id, "I grew up in Marseille")
    models = await memory.store.vector_models(alice.user_id)
    assert models == {embedder.model_name: len(FACTS), other.model_name: len(FACTS) - 1}
    report = await Reindex(memory.store, other).run(await Reindex(memory.store, other).users(["alice"]))
    assert report.embedded == 1
    assert "I grew up in Marseille" in (await semantic(memory, other, alice, "childhood in Marseille"))[:2]


async def test_purged_fact_has_no_vector_left(seeded, embedder, other, alice):
    memory = seeded
    await Reindex(memory.store, other).run(await Reindex(memory.store, other).users(["alice"]))
    fact = next(
        f for f in await memory.store.list_facts(Scope(alice.user_id, all_agents=True)) if "bees" in f.text
    )
    await memory.purge(alice, fact.id)
    n = len(FACTS) - 1
    assert await memory.store.vector_models(alice.user_id) == {embedder.model_name: n, other.model_name: n}
    assert (
        await Reindex(memory.store, other).run(await Reindex(memory.store, other).users(["alice"]))
    ).embedded == 0
