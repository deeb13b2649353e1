"""A database at schema version 9, the last before every per-user table's key held user_id,
for the tests that upgrade it in place (migration 10, "user_keys"): two people's facts, with
vectors of two models, their events, an agent, an API key, and jobs done, claimed and pending.

It is filled through the store opened at version 9 (users, agents, keys, facts, their events
and full-text index, jobs: what version 9 sent for them is what the store sends still),
except the vectors: version 9 upserted them under the key (fact_rowid, model), which a
version 9 database has and the store no longer names, so they are written here as plain rows.

After the upgrade, `check_upgraded` asserts that everything reads back and still works.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg

from mnemo import keys
from mnemo.domain import (
    Action,
    Change,
    Claim,
    Fact,
    JobStatus,
    Scope,
    new_id,
)
from mnemo.store.rows import ts
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import raw_sql, texts
from tests.store.legacy import AT, new_fact, old_turn, old_user

OLDER_MODEL = "older-model"  # a second model's vectors, as `mnemo reindex` leaves them beside
LISBON, KAYAK, PIN, MISO = "I live in Lisbon", "I own a red kayak", "My bank PIN is 4426", "I make miso soup"
COFFEE = "I like coffee"


@dataclass
class Filled:
    alice: str
    bob: str
    facts: dict[str, str]  # text -> fact id
    rowids: list[tuple[str, int]]  # (fact id, rowid) of every fact, as version 9 numbered them
    token: str  # alice's API key
    done: str  # bob's job, learnt from
    claimed: str  # bob's job, held by the worker "w9"
    pending: str  # alice's job, waiting


def _fact(user_id: str, agent_id: str | None, text: str, model: str) -> Fact:
    return new_fact(new_id(), text, embedding_model=model).evolve(user_id=user_id, agent_id=agent_id)


async def _write_vector(store, fact: Fact, rowid: int, model: str, vector: np.ndarray) -> None:
    """A vector row as version 9 wrote it (and, on PostgreSQL, the count of the user's vectors)."""
    vector = np.asarray(vector, dtype=np.float32)
    if isinstance(store, SQLiteStore):
        store._conn.execute(
            "INSERT INTO fact_vectors (fact_rowid, user_id, model, embedding) VALUES (?, ?, ?, ?)",
            (rowid, fact.user_id, model, vector.tobytes()),
        )
        return
    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO fact_vectors (fact_rowid, user_id, model, dims, active, agent_key, embedding)"
            " VALUES (%s, %s, %s, %s, true, %s, %s)",
            (
                rowid,
                fact.user_id,
                model,
                len(vector),
                fact.agent_id or "",
                "[" + ",".join(map(str, vector.tolist())) + "]",
            ),
        )
        await conn.execute(
            "INSERT INTO vector_counts (user_id, model, n) VALUES (%s, %s, 1)"
            " ON CONFLICT (user_id, model) DO UPDATE SET n = vector_counts.n + 1",
            (fact.user_id, model),
        )


async def _claim(store, worker: str, lease: timedelta) -> str:
    """Claim the next job as version 9's store did: on SQLite, its statement; on PostgreSQL,
    its mnemo_claim_job (today's store claims through functions that migration 18 made)."""
    if isinstance(store, SQLiteStore):
        [(job_id, user_id)] = await raw_sql(
            store,
            "SELECT id, user_id FROM jobs WHERE status = 'pending' ORDER BY next_attempt_at, id LIMIT 1",
        )
        until = ts(datetime.now(UTC) + lease)
        await raw_sql(
            store,
            f"UPDATE jobs SET status = 'claimed', claimed_by = '{worker}', lease_until = '{until}',"
            f" attempts = attempts + 1 WHERE user_id = '{user_id}' AND id = '{job_id}'",
        )
        return job_id
    seconds = int(lease.total_seconds())
    [(job_id,)] = await raw_sql(
        store,
        f"SELECT job_id FROM mnemo_claim_job('{worker}', now(), now() + interval '{seconds} seconds')",
    )
    return job_id


async def fill(store, embedder) -> Filled:
    """Fill `store`, open at schema version 9."""
    # the users as version 9 wrote them: today's store reads columns that came later
    alice, bob = await old_user(store, "alice"), await old_user(store, "bob")
    chef = await store.create_agent(alice, "Chef")
    key, token = keys.new_key(alice, "laptop", AT)
    await store.add_api_key(key)

    model = embedder.model_name
    made = [_fact(alice, None, t, model) for t in (LISBON, KAYAK, PIN)]
    made += [_fact(alice, chef.id, MISO, model), _fact(bob, None, COFFEE, model)]
    for user in (alice, bob):
        await store.commit(user, [Change(f, Action.CREATE, "user") for f in made if f.user_id == user], AT)
    rowids = sorted(await raw_sql(store, "SELECT id, rowid FROM facts"))
    rowid_of = dict(rowids)
    for fact, vector in zip(made, await embedder.embed([f.text for f in made]), strict=True):
        await _write_vector(store, fact, rowid_of[fact.id], model, vector)
        if fact.text == KAYAK:
            await _write_vector(store, fact, rowid_of[fact.id], OLDER_MODEL, vector)

    # the queue: bob's first turn learnt from, his second held by a worker, alice's waiting
    lease = timedelta(minutes=5)
    done = await old_turn(store, bob, "c1", "I like coffee")
    assert await _claim(store, "w9", lease) == done
    await store.commit(bob, [], AT, finish=(Claim(done, "w9"), {}))
    claimed = await old_turn(store, bob, "c1", "I like tea too")
    assert await _claim(store, "w9", lease) == claimed
    pending = await old_turn(store, alice, "c1", "I have a cat")
    return Filled(alice, bob, {f.text: f.id for f in made}, rowids, token, done, claimed, pending)


async def check_upgraded(memory, filled: Filled) -> None:
    """Everything version 9 held reads back under the new keys, and every kind of write works."""
    store, model = memory.store, memory.embedder.model_name
    alice, bob = Scope(filled.alice), Scope(filled.bob)
    everything = Scope(filled.alice, all_agents=True)
    # every fact keeps its rowid: the full-text index and the vectors name facts by it
    assert sorted(await raw_sql(store, "SELECT id, rowid FROM facts")) == filled.rowids
    listed = await memory.list(everything, statuses=None)
    assert sorted(texts(listed)) == sorted([KAYAK, PIN, LISBON, MISO])
    assert texts(await memory.list(bob)) == [COFFEE]
    assert (await memory.get(everything, filled.facts[MISO])).agent_id is not None
    assert await store.vector_models(filled.alice) == {model: 4, OLDER_MODEL: 1}
    assert texts(await memory.recall("where do I live", alice))[0] == LISBON
    assert texts(await store.lexical(alice, "kayak", 5)) == [KAYAK]
    assert texts(await memory.recall("boat", alice, arms=("semantic",)))[0] == KAYAK
    assert texts(await memory.recall("coffee", bob)) == [COFFEE]
    assert len(await memory.history(alice, filled.facts[LISBON])) == 1

    # keys: found by id alone, before the user is known
    assert (await memory.accounts.authenticate(filled.token)).id == filled.alice
    # the queue: a claim held across the upgrade is found by its id, given back, claimed again
    assert (await store.get_job(filled.bob, filled.done)).status == JobStatus.DONE
    await store.release_job(Claim(filled.claimed, "w9"))
    assert (await store.get_job(filled.bob, filled.claimed)).status == JobStatus.PENDING
    now, lease = datetime.now(UTC), timedelta(minutes=5)
    claimed = [await store.claim_job("w10", now, lease) for _ in range(3)]
    assert claimed[2] is None and {j.id for j in claimed[:2]} == {filled.claimed, filled.pending}
    for job in claimed[:2]:
        await store.commit(job.user_id, [], now, finish=(Claim(job.id, "w10"), {}))
        assert (await store.get_job(job.user_id, job.id)).status == JobStatus.DONE

    # commits: a new fact, an edit (which drops the older model's vector), a purge
    await memory.add(alice, "I play the cello")
    await memory.edit(alice, filled.facts[KAYAK], "I own a blue kayak")
    assert await store.vector_models(filled.alice) == {model: 5}
    await memory.purge(everything, filled.facts[PIN])
    assert PIN not in texts(await memory.recall("bank PIN", alice))
    assert texts(await memory.recall("boat", alice, arms=("semantic",)))[0] == "I own a blue kayak"
    for user in (filled.alice, filled.bob):
        assert (await memory.verify_audit(user)).ok
    assert len(await store.events(filled.alice)) == 4 + 3
