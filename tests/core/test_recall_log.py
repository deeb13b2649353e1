"""The recall log: which assistant was given which fact, when; the person's switch; keeping;
erasure; nobody else's rows."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta

import pytest

from mnemo.batch import export
from mnemo.batch.transfer.restore import read_export
from mnemo.domain import NotFound, RecallRecord, RecallVia, Scope
from mnemo.memory import Memory
from mnemo.recall import log_writer
from mnemo.store.rows import when
from tests.helpers import every_row, raw_sql


async def _rows(memory) -> list[tuple]:
    """The recall log as stored, everyone's, once what waited is written."""
    await memory.write_recall_log()
    return await raw_sql(
        memory.store, "SELECT user_id, fact_id, agent_id, via, recall_id FROM recalls ORDER BY at"
    )


async def test_an_assistants_recall_is_recorded_with_its_agent_and_face(memory, alice, clock):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef", private=True)
    pasta = await memory.add(Scope(alice.user_id, chef.id), "I cook pasta on Sundays")
    tea = await memory.add(alice, "I drink sencha tea")

    await memory.recall("sencha tea", alice, via=RecallVia.PROXY)
    clock.advance(minutes=1)
    hits = await memory.recall("pasta on Sundays", Scope(alice.user_id, chef.id), via=RecallVia.MCP)
    assert pasta.id in {h.fact.id for h in hits}

    rows = await _rows(memory)
    assert (alice.user_id, pasta.id, chef.id, "mcp") in [r[:4] for r in rows]
    assert (alice.user_id, tea.id, "", "proxy") in [r[:4] for r in rows]
    # one recall, one id for all its rows
    by_recall = {r[4] for r in rows if r[3] == "mcp"}
    assert len(by_recall) == 1 and len([r for r in rows if r[3] == "mcp"]) == len(hits)

    summary = await memory.recalls(Scope(alice.user_id, all_agents=True), pasta.id)
    assert summary.last is not None and summary.last.agent_id == chef.id and summary.last.via == RecallVia.MCP
    assert summary.count == 1


async def test_the_persons_own_search_and_list_record_nothing(memory, alice):
    fact = await memory.add(alice, "My sister lives in Porto")
    assert await memory.search("sister Porto", alice)
    assert await memory.list(alice)
    assert await memory.recall("sister Porto", alice)  # no face named: a person looking
    assert await _rows(memory) == []
    summary = await memory.recalls(alice, fact.id)
    assert summary.last is None and summary.count == 0


async def test_counts_are_over_the_last_week(memory, alice, clock):
    fact = await memory.add(alice, "I run on Tuesdays")
    for _ in range(3):
        await memory.recall("run Tuesdays", alice, via=RecallVia.API)
    clock.advance(days=8)
    await memory.recall("run Tuesdays", alice, via=RecallVia.PROXY)
    summary = await memory.recalls(alice, fact.id)
    assert summary.count == 1 and summary.last is not None and summary.last.via == RecallVia.PROXY
    assert summary.last.at == clock.now


async def test_the_switch_off_records_nothing_and_deletes_what_was_recorded(memory, alice, bob):
    fact = await memory.add(alice, "I am allergic to peanuts")
    bobs = await memory.add(bob, "I am allergic to shellfish")
    await memory.recall("allergic peanuts", alice, via=RecallVia.PROXY)
    await memory.recall("allergic shellfish", bob, via=RecallVia.PROXY)
    (recall_id,) = {r[4] for r in await _rows(memory) if r[0] == alice.user_id}

    user = await memory.accounts.set_record_recalls(alice.user_id, False)
    assert user.record_recalls is False
    assert recall_id not in await every_row(memory.store)
    await memory.recall("allergic peanuts", alice, via=RecallVia.PROXY)
    assert [r[0] for r in await _rows(memory)] == [bob.user_id]  # bob's switch is his own
    assert (await memory.recalls(alice, fact.id)).last is None
    assert (await memory.recalls(bob, bobs.id)).count == 1

    await memory.accounts.set_record_recalls(alice.user_id, True)
    await memory.recall("allergic peanuts", alice, via=RecallVia.PROXY)
    assert (await memory.recalls(alice, fact.id)).count == 1


async def test_recalls_logged_at_once_all_land_while_one_person_turns_the_log_off(memory, clock):
    """Recalls of twelve people logged at once, three times over, while one of them turns the
    log off: every write answers, each person's rows are there once, the one who turned it off
    has none. On Citus the write once locked the person's row of `users` (FOR SHARE), which
    Citus takes as a lock on the whole reference table, and such writes deadlocked each other
    whoever they were for; now the person's own lock orders the write and the switch."""
    store = memory.store
    people = [await store.ensure_user(f"person {i}") for i in range(12)]
    facts = {
        p.id: [(await memory.add(Scope(p.id), f"I own {n} kayaks")).id for n in range(3)] for p in people
    }
    keep_after = clock.now - timedelta(days=7)

    async def log(person, n: int) -> int:
        said = [(f"recall-{n}", RecallRecord(facts[person.id][n], None, clock.now, RecallVia.PROXY))]
        return await store.record_recalls(person.id, said, keep_after)

    for n in range(3):
        off = [store.update_user(people[0].id, record_recalls=False)] if n == 1 else []
        done = await asyncio.gather(*(log(p, n) for p in people), *off)
        assert done[1 : len(people)] == [1] * (len(people) - 1)
    rows = await raw_sql(store, "SELECT user_id, fact_id FROM recalls ORDER BY user_id, fact_id")
    assert sorted(rows) == sorted((p.id, facts[p.id][n]) for p in people[1:] for n in range(3))


async def test_rows_past_keeping_are_never_shown_and_go_with_the_next_recall(memory, alice, clock):
    memory.settings.recall_log_days = 2
    fact = await memory.add(alice, "My cat is called Miso")
    await memory.recall("cat Miso", alice, via=RecallVia.PROXY)
    (old,) = {r[4] for r in await _rows(memory)}
    clock.advance(days=2, seconds=1)
    assert (await memory.recalls(alice, fact.id)).last is None  # past keeping: not shown
    assert old in await every_row(memory.store)  # until the next recording
    await memory.recall("cat Miso", alice, via=RecallVia.PROXY)
    rows = await _rows(memory)
    assert len(rows) == 1 and old not in await every_row(memory.store)
    assert (await memory.recalls(alice, fact.id)).count == 1


async def test_zero_days_keeps_none(memory, alice):
    memory.settings.recall_log_days = 0
    fact = await memory.add(alice, "My cat is called Miso")
    assert await memory.recall("cat Miso", alice, via=RecallVia.PROXY)
    assert await _rows(memory) == []
    assert (await memory.recalls(alice, fact.id)).last is None


async def test_another_user_never_sees_the_rows(memory, alice, bob):
    fact = await memory.add(alice, "I play the cello")
    await memory.recall("cello", alice, via=RecallVia.PROXY)
    with pytest.raises(NotFound):
        await memory.recalls(bob, fact.id)
    assert [r async for r in memory.recall_log(bob.user_id)] == []
    assert [r.fact_id async for _, r in memory.recall_log(alice.user_id)] == [fact.id]
    # nor its store, asked for the fact by id under bob's name
    found = await memory.store.recall_summary(bob.user_id, fact.id, fact.created_at, fact.created_at)
    assert found.last is None and found.count == 0


async def test_a_purged_facts_rows_go_with_it_and_erasing_everything_takes_all(memory, alice):
    secret = await memory.add(alice, "My bank PIN hint is my first dog")
    other = await memory.add(alice, "I like hiking in the Alps")
    await memory.recall("bank PIN hint dog", alice, via=RecallVia.PROXY)
    await memory.recall("hiking Alps", alice, via=RecallVia.PROXY)
    assert {r[1] for r in await _rows(memory)} >= {secret.id, other.id}

    await memory.purge(alice, secret.id)
    assert secret.id not in {r[1] for r in await _rows(memory)}
    assert other.id in {r[1] for r in await _rows(memory)}

    left = {r[4] for r in await _rows(memory)}
    await memory.erase_everything(alice.user_id)
    dump = await every_row(memory.store)
    assert await _rows(memory) == [] and not any(rid in dump for rid in left)


async def test_a_recall_survives_its_log_failing(memory, alice, caplog):
    await memory.add(alice, "I live in Lisbon")
    await raw_sql(memory.store, "DROP TABLE recalls")
    with caplog.at_level(logging.ERROR, logger="mnemo.recall.log_writer"):
        hits = await memory.recall("Lisbon", alice, via=RecallVia.PROXY)
        await memory.write_recall_log()
    assert [h.fact.text for h in hits] == ["I live in Lisbon"]
    assert f"the recall log of user {alice.user_id} was not written (1 rows)" in caplog.text


async def test_the_export_holds_the_log_and_an_import_reads_past_it(memory, alice, bob, tmp_path, clock):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef", reads_default=True)
    fact = await memory.add(alice, "I cook with cast iron")
    await memory.recall("cast iron", Scope(alice.user_id, chef.id), via=RecallVia.PROXY)
    clock.advance(seconds=1)
    await memory.recall("cast iron", alice, via=RecallVia.MCP)
    await memory.add(bob, "I cook with cast iron too")
    await memory.recall("cast iron", bob, via=RecallVia.PROXY)
    user = await memory.accounts.find_user("alice")

    lines = [line async for line in export.jsonl(memory, memory.accounts, user)]
    records = [json.loads(line) for line in lines]
    recalls = [r for r in records if r["type"] == "recall"]
    assert [(r["fact_id"], r["agent_id"], r["via"]) for r in recalls] == [
        (fact.id, chef.id, "proxy"),
        (fact.id, None, "mcp"),
    ]
    assert records[-1]["recalls"] == 2 and records[0]["user"]["record_recalls"] is True
    path = tmp_path / "alice.jsonl"
    path.write_text("".join(lines))
    read = read_export(path)
    assert read.recalls == 2 and [f.id for f in read.facts] == [fact.id]


class _HeldWrites:
    """The store's recall log writes, each held until `go` is set, and what each was given."""

    def __init__(self, store, monkeypatch) -> None:
        self.calls: list[list] = []
        self.go = asyncio.Event()
        real = store.record_recalls

        async def held(user_id, found, keep_after):
            self.calls.append(list(found))
            await self.go.wait()
            return await real(user_id, found, keep_after)

        monkeypatch.setattr(store, "record_recalls", held)


async def test_a_recall_returns_before_its_log_is_written_and_recalls_meanwhile_share_a_write(
    memory, alice, monkeypatch
):
    fact = await memory.add(alice, "I drink sencha tea")
    monkeypatch.setattr(log_writer, "WAIT", 0)  # the first recall's write starts at once
    writes = _HeldWrites(memory.store, monkeypatch)
    # the store's write is held: the recalls answer all the same
    for _ in range(4):
        hits = await asyncio.wait_for(memory.recall("sencha tea", alice, via=RecallVia.PROXY), 10)
        assert [h.fact.id for h in hits] == [fact.id]
    assert len(writes.calls) == 1  # the first recall's rows, being written
    writes.go.set()
    await memory.write_recall_log()
    # the three recalls that came while it was written: one write
    assert [len(c) for c in writes.calls] == [1, 3] and len({rid for rid, _ in writes.calls[1]}) == 3
    assert (await memory.recalls(alice, fact.id)).count == 4


async def test_reading_the_log_writes_what_waits_first(memory, alice, bob):
    fact = await memory.add(alice, "I play the cello")
    await memory.recall("cello", alice, via=RecallVia.MCP)
    await memory.recall("cello", alice, via=RecallVia.PROXY)
    # no write awaited in between: the person's own reads see both
    assert (await memory.recalls(alice, fact.id)).count == 2
    await memory.recall("cello", alice, via=RecallVia.API)
    assert [r.via async for _, r in memory.recall_log(alice.user_id)] == [
        RecallVia.MCP,
        RecallVia.PROXY,
        RecallVia.API,
    ]


async def test_a_fact_erased_before_its_recall_is_written_leaves_no_row(memory, alice, monkeypatch):
    secret = await memory.add(alice, "My bank PIN hint is my first dog")
    other = await memory.add(alice, "My first dog was a beagle")
    writes = _HeldWrites(memory.store, monkeypatch)
    hits = await memory.recall("first dog", alice, via=RecallVia.PROXY)
    assert {h.fact.id for h in hits} == {secret.id, other.id}
    await memory.purge(alice, secret.id)  # while the recall's rows wait
    writes.go.set()
    rows = await _rows(memory)
    assert [r[1] for r in rows] == [other.id]
    # nor when it was recalled
    assert await raw_sql(memory.store, f"SELECT last_recalled_at FROM facts WHERE id = '{secret.id}'") == [
        (None,)
    ]


async def test_the_switch_turned_off_while_rows_wait_keeps_them_out(memory, alice, monkeypatch):
    fact = await memory.add(alice, "I am allergic to peanuts")
    writes = _HeldWrites(memory.store, monkeypatch)
    await memory.recall("peanuts", alice, via=RecallVia.PROXY)
    await memory.recall("peanuts", alice, via=RecallVia.MCP)
    await memory.accounts.set_record_recalls(alice.user_id, False)
    writes.go.set()
    assert await _rows(memory) == []
    assert (await memory.recalls(alice, fact.id)).last is None


async def test_too_many_rows_waiting_and_a_recall_writes_its_own(memory, alice, monkeypatch):
    fact = await memory.add(alice, "I swim on Fridays")
    monkeypatch.setattr(log_writer, "MOST_WAITING", 1)
    written = []
    real = memory.store.record_recalls

    async def counted(user_id, found, keep_after):
        written.append(len(found))
        return await real(user_id, found, keep_after)

    monkeypatch.setattr(memory.store, "record_recalls", counted)
    await memory.recall("swim Fridays", alice, via=RecallVia.PROXY)
    assert written == [1]  # before the recall returned
    assert (await memory.recalls(alice, fact.id)).count == 1


async def test_closing_writes_what_waits(make_store, embedder, settings, clock):
    memory = await Memory(make_store(clock=clock), embedder, settings=settings, clock=clock).open()
    user = await memory.accounts.user("alice")
    fact = await memory.add(Scope(user.id), "I keep bees")
    await memory.recall("bees", Scope(user.id), via=RecallVia.PROXY)
    await memory.close()
    reopened = await Memory(make_store(clock=clock), embedder, settings=settings, clock=clock).open()
    try:
        assert (await reopened.recalls(Scope(user.id), fact.id)).count == 1
    finally:
        await reopened.close()


async def test_a_recall_before_the_switch_went_off_is_not_recorded_once_it_is_on_again(memory, alice, clock):
    """Its rows wait while the person turns the log off and on again: they stay out (the off
    noted when, so that a recall from before is never recorded later, by any process)."""
    fact = await memory.add(alice, "I am allergic to peanuts")
    await memory.recall("allergic peanuts", alice, via=RecallVia.PROXY)  # its rows wait
    clock.advance(seconds=1)
    await memory.accounts.set_record_recalls(alice.user_id, False)
    await memory.accounts.set_record_recalls(alice.user_id, True)
    assert await _rows(memory) == []
    clock.advance(seconds=1)
    await memory.recall("allergic peanuts", alice, via=RecallVia.MCP)  # after: recorded
    assert [r[3] for r in await _rows(memory)] == ["mcp"]
    assert (await memory.recalls(alice, fact.id)).count == 1


async def test_a_reader_cancelled_while_it_writes_takes_no_rows_with_it(memory, alice, monkeypatch):
    fact = await memory.add(alice, "I drink sencha tea")
    monkeypatch.setattr(log_writer, "WAIT", 10)  # the log's own task waits: the reader writes
    writes = _HeldWrites(memory.store, monkeypatch)
    for _ in range(3):
        await memory.recall("sencha tea", alice, via=RecallVia.PROXY)
    reader = asyncio.create_task(memory.recalls(alice, fact.id))
    while not writes.calls:  # the reader's write of the three recalls is under way
        await asyncio.sleep(0.01)
    reader.cancel()  # its client went away
    await asyncio.gather(reader, return_exceptions=True)
    writes.go.set()
    assert (await memory.recalls(alice, fact.id)).count == 3


async def test_recalls_written_together_keep_each_facts_own_last_recall(memory, alice, clock):
    tea = await memory.add(alice, "I drink sencha tea")
    bees = await memory.add(alice, "I keep bees on the roof")
    first, later = clock.now, clock.now + timedelta(days=5)
    rows = [
        ("recall-1", RecallRecord(tea.id, None, first, RecallVia.PROXY)),
        ("recall-2", RecallRecord(bees.id, None, later, RecallVia.PROXY)),
    ]
    assert await memory.store.record_recalls(alice.user_id, rows, first - timedelta(days=30)) == 2
    stored = dict(await raw_sql(memory.store, "SELECT id, last_recalled_at FROM facts"))
    assert when(stored[tea.id]) == first and when(stored[bees.id]) == later
