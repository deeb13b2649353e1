"""A commit of many new facts at once (an import, a seeding, a turn's first facts): on PostgreSQL
and Citus it goes in a few statements a thousand facts (store/postgres.py, `_apply_new`), on
SQLite a fact at a time. Either way every fact, vector and event is written, the events in the
chain's order, and a batch that fails part-way writes nothing."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from mnemo import audit
from mnemo.domain import Scope, Source, SourceKind, Status
from mnemo.write import changes
from tests.helpers import raw_sql

MODEL = "test-model"
N = 2_345  # past two statements' worth (1,000 rows each) of facts, vectors and events


def unit_vectors(n: int, seed: int = 3) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def new_facts(scope: Scope, texts: list[str], vectors: np.ndarray, now, every_without: int = 7):
    """One new fact a text; every `every_without`-th without a model or a vector."""
    out = []
    for i, (text, v) in enumerate(zip(texts, vectors, strict=True)):
        plain = i % every_without == every_without - 1
        fact = changes.new_fact(
            scope,
            text,
            now=now + timedelta(seconds=i),
            source=Source(SourceKind.IMPORT),
            embedding_model=None if plain else MODEL,
        )
        out.append(changes.create(fact, None if plain else v, "import"))
    return out


async def test_many_new_facts_are_written_whole_and_chained_in_order(store, clock, backend):
    user = (await store.ensure_user("many")).id
    scope = Scope(user, all_agents=True)
    texts = [f"fact number {i}: café ☕{'ü' * (i % 5)}" for i in range(N)]
    vectors = unit_vectors(N)
    batch = new_facts(scope, texts, vectors, clock())
    returned = await store.commit(user, batch, clock())

    stored = await store.list_facts(scope, limit=10 * N)
    assert sorted(f.text for f in stored) == sorted(texts)
    with_vectors = [c for c in batch if c.vector is not None]
    kept = await store.vectors(scope, [c.fact.id for c in batch], MODEL)
    assert set(kept) == {c.fact.id for c in with_vectors}
    for c in with_vectors:
        assert np.allclose(kept[c.fact.id], c.vector, atol=1e-6)
    # each vector is searched: a fact's own vector finds it first
    probe = with_vectors[1_234]
    assert (await store.nearest(scope, probe.vector, MODEL, 1))[0].fact.id == probe.fact.id

    events = await store.events(user)
    assert [e.fact_id for e in events] == [c.fact.id for c in batch]  # the chain's order is seq's
    assert [(e.seq, e.hash) for e in events] == [(e.seq, e.hash) for e in returned]
    assert audit.verify(events).ok
    assert await store.chain_head(user) == returned[-1].hash

    # the next commit, an edit beside a new fact (a fact at a time), chains on from the batch
    edited = stored[0]
    more = [
        changes.edit(
            edited, "an edited fact", now=clock(), vector=vectors[0], embedding_model=MODEL, actor="person"
        ),
        *new_facts(scope, ["one more fact"], vectors[:1], clock(), every_without=2),
    ]
    await store.commit(user, more, clock())
    events = await store.events(user)
    assert len(events) == N + 2 and audit.verify(events).ok
    assert (await store.get_fact(scope, edited.id)).text == "an edited fact"
    if backend != "sqlite":  # the counts that choose PostgreSQL's vector search follow
        counted = await raw_sql(store, "SELECT model, n FROM vector_counts")
        assert counted == await raw_sql(store, "SELECT model, count(*) FROM fact_vectors GROUP BY model")
        assert counted == [(MODEL, len(set(kept) | {edited.id}) + 1)]  # the edit embeds its fact
        assert await raw_sql(store, "SELECT active FROM fact_counts") == [(N + 1,)]


async def test_a_batch_that_fails_part_way_writes_nothing(store, clock):
    user = (await store.ensure_user("failing")).id
    scope = Scope(user, all_agents=True)
    first = new_facts(scope, ["kept fact"], unit_vectors(1), clock())
    await store.commit(user, first, clock())
    head = await store.chain_head(user)
    texts = [f"never kept {i}" for i in range(1_500)]
    batch = new_facts(scope, texts, unit_vectors(1_500, seed=4), clock())
    # the last fact of the second thousand takes the id of one already stored
    clash = batch[-1]
    batch[-1] = changes.create(clash.fact.evolve(id=first[0].fact.id), clash.vector, "import")
    # (the database's own error: sqlite3's IntegrityError, psycopg's UniqueViolation)
    with pytest.raises(Exception, match=r"(?i)unique") as raised:
        await store.commit(user, batch, clock())
    assert "never kept" not in str(raised.value)
    stored = await store.list_facts(scope, statuses=list(Status), limit=10_000)
    assert [f.text for f in stored] == ["kept fact"]
    assert await store.chain_head(user) == head
    assert await store.vectors(scope, [c.fact.id for c in batch[:-1]], MODEL) == {}
    kept = await store.vectors(scope, [first[0].fact.id], MODEL)
    assert np.allclose(kept[first[0].fact.id], first[0].vector, atol=1e-6)
    assert len(await store.events(user)) == 1


@pytest.mark.parametrize("backend", ["postgres", "citus"], indirect=True)
async def test_the_many_row_statements_are_not_kept_prepared(make_store, clock):
    """psycopg prepares a statement run five times on a connection and keeps it: a statement of a
    thousand rows would hold megabytes of the server's memory for each row count that recurs."""
    store = make_store(clock=clock, max_size=1)  # one connection: every commit on it
    await store.open()
    try:
        user = (await store.ensure_user("prepared")).id
        scope = Scope(user, all_agents=True)
        for round in range(7):
            texts = [f"round {round} fact {i}" for i in range(40)]
            await store.commit(user, new_facts(scope, texts, unit_vectors(40, seed=round), clock()), clock())
        prepared = await store._read(None, lambda tx: tx.all("SELECT statement FROM pg_prepared_statements"))
    finally:
        await store.close()
    assert not [s for (s,) in prepared if "), (" in s], prepared
