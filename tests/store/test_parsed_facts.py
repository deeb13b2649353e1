"""Parsed fact rows are kept a minute by the row itself: never stale, and a purge's text leaves."""

from __future__ import annotations

from mnemo.store import rows
from mnemo.store.rows import ParsedFacts
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import texts


def kept_texts() -> list[str]:
    return [fact.text for _, fact in rows.PARSED_FACTS._facts.values()]


async def test_a_change_to_any_column_reads_as_the_new_fact(memory, alice):
    fact = await memory.add(alice, "I live in Lisbon")
    assert texts(await memory.recall("Where do I live?", alice)) == ["I live in Lisbon"]
    await memory.pin(alice, fact.id)
    await memory.edit(alice, fact.id, "I live in Porto")

    (hit,) = await memory.recall("Where do I live?", alice)
    assert hit.fact.text == "I live in Porto" and hit.fact.pinned
    assert (await memory.get(alice, fact.id)).version == hit.fact.version


async def test_a_purge_leaves_no_parsed_copy_of_its_text(memory, alice):
    keep = await memory.add(alice, "I play the cello")
    pin = await memory.add(alice, "My bank PIN is 442618")
    await memory.recall("what is my PIN, and what do I play?", alice)
    if isinstance(memory.store, SQLiteStore):  # PostgreSQL's rows hold jsonb: never kept
        assert any("442618" in text for text in kept_texts())  # the check can see it while it is there

    await memory.purge(alice, pin.id)

    assert not any("442618" in text for text in kept_texts())
    assert texts(await memory.recall("what do I play?", alice, arms=("lexical",))) == [keep.text]


def test_rows_are_parsed_again_after_their_minute_and_unhashable_rows_every_time():
    parsed = ParsedFacts(ttl=60.0)
    row = _row("I own a red kayak")
    first = parsed.fact(row)
    assert parsed.fact(row) is first
    parsed._facts[tuple(row)] = (0.0, first)  # its minute is over
    assert parsed.fact(row) is not first and parsed.fact(row) == first
    jsonb = [*row[:16], {"kind": "import"}, *row[17:]]  # PostgreSQL's jsonb: a dict
    assert parsed.fact(jsonb).text == "I own a red kayak" and len(parsed._facts) == 1


def _row(text: str) -> list:
    return [
        1, "f1", "u1", None, text, "other", "active", 1.0, "2025-06-01T12:00:00.000000Z", None,
        None, None, None, None, None, 1, '{"kind": "import"}', "m", 0, 1, None, 0,
    ]  # fmt: skip
