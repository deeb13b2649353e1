"""Finding the messages that say a text: what an erasure's plan and "erase about" ask the store.

It once read every message of the person on SQLite's one store thread and matched each in
Python there (2–5 s for 10,000 messages, while every other person's call waited). Now the
store reads only the messages that hold the text's words (an index of each message's words,
see fulltext.message_words), at most MESSAGES_PER_READ rows a trip, and the words are
confirmed (domain.says) off the store's thread; what the whole scan found it still finds.
"""

from __future__ import annotations

import pytest

from mnemo.domain import Message, Scope, says
from mnemo.store.sql import erasure as erasure_sql
from mnemo.store.sql import store as store_sql

FILLER = "I went to the market today and bought bread, apples and coffee for the week"

# what a message says, and texts that a whole scan (domain.says) finds in some of them or not:
# case, NFKC compatibility forms, case folding beyond lower case, trailing punctuation,
# combining marks, scripts without spaces, words joined by punctuation or an underscore
SAID = [
    "I drink TEA every morning",
    "ｔｅａ with milk, please",  # full-width letters: NFKC makes them "tea"
    "We should steal the plans",
    "Instead of tea, coffee",
    "Tea.",
    "The STRASSE was closed",
    "I love ﬁsh and chips",  # the ligature ﬁ: NFKC makes it "fi"
    "tea\u0353 time",  # a combining mark no letter takes: not a word character
    "A café in Paris",
    "I live in 東京 now",
    "my_tea_list and snake_case",
    "He gave it a +1 and a 🍵",
    "Don't   forget   the   green    tea!",
    "🍵🍵",
    "",
]
QUERIES = [
    "tea",
    "TEA",
    "ｔｅａ",
    "Tea!",
    "straße",
    "fish",
    "café",
    "cafe\u0301",  # NFKC composes it: "café"
    "東京",
    "my_tea_list",
    "snake",
    "+1",
    "🍵",
    "don't forget the green tea",
    "green tea!",
    "the plans",
    "steal the",
    "i",
    "nothing at all",
]


async def _saved(memory, scope: Scope, texts: list[str], conversation: str = "c1") -> list[Message]:
    return await memory.store.save_messages(
        scope, conversation, [Message("user", t) for t in texts], memory.clock()
    )


async def test_a_search_reads_only_the_messages_that_hold_its_words_and_matches_them_off_the_store_thread(
    memory, alice, bob, monkeypatch
):
    """The regression: 1,003 messages, 2 of which say "tea". The old whole scan matched all
    1,003 in Python, on SQLite under the store's lock (every other call waited)."""
    for c in range(10):
        await _saved(memory, alice, [f"{FILLER} {c} {n}" for n in range(100)], f"filler{c}")
    await _saved(memory, alice, ["I drink TEA every morning", "Instead of tea, coffee", "We steal"], "c1")
    await _saved(memory, bob, ["I drink tea too"], "c1")
    store = memory.store
    lock = getattr(store, "_lock", None)  # SQLite's: held while its one thread runs a call
    matched: list[bool] = []  # per row matched in Python: whether the store's lock was held

    def watched(text: str, words: str) -> bool:
        matched.append(lock is not None and lock.locked())
        return says(text, words)

    monkeypatch.setattr(erasure_sql, "says", watched)
    found = await store.messages_saying(alice.user_id, ["tea"])
    assert [t for _, _, t in found] == ["I drink TEA every morning", "Instead of tea, coffee"]
    assert 2 <= len(matched) <= 10, f"{len(matched)} messages matched in Python"
    assert not any(matched), "messages were matched in Python on the store's thread"


async def test_one_trip_to_the_store_reads_at_most_a_page_of_messages(memory, alice, monkeypatch):
    """However many messages hold a text's words, or when a text has no word to look up (then
    every message is read), a trip reads at most MESSAGES_PER_READ of them, and the pages
    together find every one, in the order they were said."""
    monkeypatch.setattr(store_sql, "MESSAGES_PER_READ", 3)
    for c in range(4):
        await _saved(memory, alice, [f"tea {c} {n}" for n in range(5)] + ["coffee 🍵"], f"c{c}")
    store = memory.store
    reads: list[int] = []
    real = store._read

    async def counted(user_id, fn, *args, **kw):
        out = await real(user_id, fn, *args, **kw)
        if fn in (erasure_sql.messages_with_words, erasure_sql.messages_after):
            reads.append(len(out))
        return out

    monkeypatch.setattr(store, "_read", counted)
    everything = [
        (c, m.content) for c in ("c0", "c1", "c2", "c3") for m in await memory.messages(alice.user_id, c)
    ]
    for query in ("tea", "🍵"):
        reads.clear()
        found = await store.messages_saying(alice.user_id, [query])
        assert [(c, t) for c, _, t in found] == [(c, t) for c, t in everything if says(t, query)]
        assert reads and max(reads) <= 3, reads
    assert len(found) == 4 and len(reads) >= 4  # every message was read, a page at a time


@pytest.mark.parametrize("query", QUERIES)
async def test_a_search_finds_what_a_whole_scan_found(memory, alice, bob, query):
    saved = await _saved(memory, alice, SAID)
    await _saved(memory, bob, SAID)
    erased = await _saved(memory, alice, [f"an erased {query}"], "c2")
    await memory.erase_selection(alice.user_id, [], [erased[0].id])
    # a message the gate rewrote (it masked a secret): its new words, not its old ones
    await memory.store.save_messages(
        alice, "c1", [], memory.clock(), rewrites=[(saved[-1].id, f"now {query}")]
    )
    contents = [m.content for m in await memory.messages(alice.user_id, "c1")]
    whole_scan = [t for t in contents if says(t, query)]
    found = await memory.store.messages_saying(alice.user_id, [query])
    assert [t for _, _, t in found] == whole_scan
    assert found or query == "nothing at all"


async def test_a_search_for_several_texts_finds_each_message_once(memory, alice):
    await _saved(memory, alice, SAID)
    found = await memory.store.messages_saying(alice.user_id, QUERIES)
    assert [t for _, _, t in found] == [t for t in SAID if any(says(t, q) for q in QUERIES)]


async def test_erased_and_removed_messages_are_no_longer_found(memory, alice):
    await _saved(memory, alice, ["I drink tea", "tea again"], "c1")
    await _saved(memory, alice, ["tea in another conversation"], "c2")
    first = (await memory.messages(alice.user_id, "c1"))[0]
    await memory.erase_selection(alice.user_id, [], [first.id])
    await memory.erase_conversation(alice.user_id, "c2", with_facts=False)
    assert [t for _, _, t in await memory.store.messages_saying(alice.user_id, ["tea"])] == ["tea again"]
