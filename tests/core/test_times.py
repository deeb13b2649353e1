"""Times at the edges of the calendar: any time a store holds reads back, on every path.

A time is checked once it is in UTC (where "1000-01-01T00:00:00+14:00" is in the year 999),
and one row that still cannot be read never takes a user's whole store down with it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mnemo.batch import export
from mnemo.domain import InvalidInput, Scope, Turn
from tests.helpers import extraction, raw_sql, texts

PLUS_14 = timezone(timedelta(hours=14))


async def exported_facts(memory, scope: Scope) -> list[dict]:
    user = await memory.store.get_user(scope.user_id)
    return [r async for r in export.records(memory, memory.accounts, user) if r["type"] == "fact"]


async def test_a_date_before_the_year_1000_reads_back_everywhere(memory, alice):
    """The year 874, and the year 1000 at +14:00 (the year 999 in UTC): lists, search, recall,
    history, export and a purge of the fact all work, and a later add too."""
    everything = Scope(alice.user_id, all_agents=True)
    iceland = await memory.add(alice, "My family came to Iceland", valid_from=datetime(874, 6, 1, tzinfo=UTC))
    edge = await memory.add(
        alice, "I was born at the edge of a date line", valid_from=datetime(1000, 1, 1, tzinfo=PLUS_14)
    )
    assert edge.valid_from == datetime(999, 12, 31, 10, 0, tzinfo=UTC)

    listed = {f.id: f for f in await memory.list(everything)}
    assert listed[iceland.id].valid_from == datetime(874, 6, 1, tzinfo=UTC)
    assert listed[edge.id].valid_from == datetime(999, 12, 31, 10, 0, tzinfo=UTC)
    assert "My family came to Iceland" in texts(await memory.search("Iceland family", everything))
    assert "My family came to Iceland" in texts(await memory.recall("where did my family come to?", alice))
    assert [e.action for e in await memory.history(everything, iceland.id)] == ["create"]
    assert any((f["valid_from"] or "").startswith("0874-06-01") for f in await exported_facts(memory, alice))
    await memory.purge(everything, edge.id)
    await memory.add(alice, "I like tea")
    assert sorted(texts(await memory.list(everything))) == ["I like tea", "My family came to Iceland"]
    assert (await memory.verify_audit(alice.user_id)).ok


async def test_a_time_outside_the_years_1_to_9999_in_utc_is_refused(memory, alice):
    with pytest.raises(InvalidInput, match="years 1 to 9999"):
        await memory.add(alice, "I was born before time", valid_from=datetime(1, 1, 1, tzinfo=PLUS_14))
    with pytest.raises(InvalidInput, match="years 1 to 9999"):
        await memory.add(
            alice,
            "I will outlive the calendar",
            valid_from=datetime(9999, 12, 31, 23, 0, tzinfo=timezone(-timedelta(hours=5))),
        )
    assert await memory.list(Scope(alice.user_id, all_agents=True), statuses=None) == []


async def test_as_of_at_the_first_day_of_the_calendar_answers(memory, alice):
    await memory.add(alice, "I like tea")
    start = datetime(1, 1, 1, tzinfo=UTC)
    assert await memory.list(alice, as_of=start) == []
    assert await memory.recall("tea", alice, as_of=start) == []


async def test_an_extracted_date_in_the_year_874_is_kept_and_the_next_turn_learns(
    llm_memory, scripted_llm, alice
):
    scripted_llm.reply_json(
        extraction(
            {"text": "My family came to Iceland in 874", "speaker": "user", "confidence": 0.9, "message": 1,
             "valid_from": "0874-06-01"},
        )
    )  # fmt: skip
    report = await llm_memory.remember(
        Turn.of(alice, ("user", "My family came to Iceland in 874."), ("assistant", "Wow."))
    )
    assert report.problems == []
    [fact] = await llm_memory.list(alice)
    assert fact.valid_from == datetime(874, 6, 1, tzinfo=UTC)
    scripted_llm.reply_json(extraction("I like tea"))
    report = await llm_memory.remember(Turn.of(alice, ("user", "I like tea."), ("assistant", "Noted.")))
    assert report.problems == [] and len(report.events) == 1


async def test_one_unreadable_row_leaves_the_rest_served(memory, alice, caplog):
    """A row no reader can take (as a date written "874-…" was): left out and logged by its id,
    while the lists, search, recall, export and the next write go on."""
    everything = Scope(alice.user_id, all_agents=True)
    broken = await memory.add(alice, "My locker code is 7391")
    await memory.add(alice, "I like tea")
    await raw_sql(memory.store, f"UPDATE facts SET category = 'no such category' WHERE id = '{broken.id}'")
    with caplog.at_level(logging.ERROR):
        assert texts(await memory.list(everything)) == ["I like tea"]
        assert texts(await memory.search("tea locker", everything)) == ["I like tea"]
        assert texts(await memory.recall("tea", alice)) == ["I like tea"]
        assert [f["text"] for f in await exported_facts(memory, alice)] == ["I like tea"]
        await memory.add(alice, "I have a cat")
    assert sorted(texts(await memory.list(everything))) == ["I have a cat", "I like tea"]
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged and all(broken.id in m for m in logged)
    assert not any("7391" in m for m in logged)
