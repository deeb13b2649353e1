"""The SQLite store's own duties: migrations, WAL, durability across reopen."""

from __future__ import annotations

import pytest
import sqlean

from mnemo.domain import Message, Scope
from mnemo.memory import Memory
from mnemo.store import sqlite as sqlite_module
from mnemo.store.migrate import Migration
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import bulk_add, texts, unrelated_facts
from tests.store import legacy, version9

# this module is about the SQLite store alone (tests/store/test_postgres.py has its twin)
pytestmark = pytest.mark.backend("sqlite")


async def test_a_fresh_database_records_its_migrations(store):
    assert await store.schema_versions() == [m.version for m in sqlite_module.MIGRATIONS]
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_an_older_database_upgrades_in_place(tmp_path, embedder, monkeypatch):
    path = tmp_path / "old.db"
    old = Memory(SQLiteStore(path), embedder)
    await old.open()
    alice = Scope((await old.accounts.user("alice")).id)
    await old.add(alice, "I live in Lisbon")
    await old.close()

    def add_nickname(cur):
        cur.execute("ALTER TABLE users ADD COLUMN nickname TEXT")

    newer = [
        *sqlite_module.MIGRATIONS,
        Migration(sqlite_module.MIGRATIONS[-1].version + 1, "nickname", add_nickname),
    ]
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", newer)
    upgraded = Memory(SQLiteStore(path), embedder)
    await upgraded.open()
    assert await upgraded.store.schema_versions() == [m.version for m in newer]
    columns = [r[1] for r in upgraded.store._conn.execute("PRAGMA table_info(users)")]
    assert "nickname" in columns
    assert texts(await upgraded.recall("where do I live", alice)) == ["I live in Lisbon"]
    await upgraded.close()


@pytest.mark.slow
async def test_a_first_version_database_with_data_upgrades_in_place(tmp_path, embedder, monkeypatch):
    """Data as the first schema held it: unsalted events of a purged PIN, the year 874 written
    as "874-…", a conversation id one user chose first (see tests/store/legacy.py)."""
    path = tmp_path / "old.db"
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", sqlite_module.MIGRATIONS[:1])
    first = SQLiteStore(path)
    await first.open()
    await first.close()
    with sqlean.connect(path) as conn:
        guessable = legacy.seed(
            conn, True, (await embedder.embed(["I live in Lisbon"]))[0], embedder.model_name
        )
    monkeypatch.undo()
    upgraded = await Memory(SQLiteStore(path), embedder).open()
    assert await upgraded.store.schema_versions() == [m.version for m in sqlite_module.MIGRATIONS]
    (valid_from,) = upgraded.store._conn.execute(
        "SELECT valid_from FROM facts WHERE id = ?", (legacy.LISBON,)
    )
    assert valid_from == ("0874-06-01T00:00:00.000000Z",)
    await legacy.check_upgraded(upgraded, guessable)
    await upgraded.close()


def _primary_key(conn, table: str) -> list[str]:
    return [
        r[1]
        for r in sorted((r for r in conn.execute(f"PRAGMA table_info({table})") if r[5]), key=lambda r: r[5])
    ]


def _unique_keys(conn, table: str) -> set[tuple[str, ...]]:
    """The columns of each unique index on `table` (a rowid alias reads as "rowid")."""
    out = set()
    for _, index, unique, _, _ in conn.execute(f"PRAGMA index_list({table})"):
        if unique:
            out.add(tuple(r[2] or "rowid" for r in conn.execute(f"PRAGMA index_info({index})")))
    return out


async def test_a_version_9_database_upgrades_to_keys_that_hold_the_user(tmp_path, embedder, monkeypatch):
    """Facts, vectors of two models, events, jobs and keys as version 9 held them (see
    tests/store/version9.py): every per-user table is keyed with its user, facts and events
    keep their rowids (the full-text index and the vectors name facts by them), and all of it
    still reads back and works."""
    path = tmp_path / "v9.db"
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", sqlite_module.MIGRATIONS[:9])
    old = SQLiteStore(path)
    await old.open()
    filled = await version9.fill(old, embedder)
    await old.close()
    monkeypatch.undo()

    upgraded = await Memory(SQLiteStore(path), embedder).open()
    assert await upgraded.store.schema_versions() == [m.version for m in sqlite_module.MIGRATIONS]
    conn = upgraded.store._conn
    # facts and events: the rowid alias stays the primary key, beside unique keys with the user
    assert _primary_key(conn, "facts") == ["rowid"]
    assert _unique_keys(conn, "facts") == {("user_id", "id"), ("user_id", "rowid")}
    assert _primary_key(conn, "fact_events") == ["seq"]
    assert _unique_keys(conn, "fact_events") == {("user_id", "seq")}
    assert _primary_key(conn, "fact_vectors") == ["user_id", "fact_rowid", "model"]
    references = {(r[2], r[3], r[4]) for r in conn.execute("PRAGMA foreign_key_list(fact_vectors)")}
    assert references == {("facts", "user_id", "user_id"), ("facts", "fact_rowid", "rowid")}
    for table in ("jobs", "api_keys", "conversations", "messages"):
        assert _primary_key(conn, table) == ["user_id", "id"], table
    assert _primary_key(conn, "vector_generations") == ["user_id"]
    assert _primary_key(conn, "backfill_progress") == ["user_id", "conversation_id", "turn_id"]
    # what is looked up by id alone, before the user is known, has an index
    plans = {
        "SELECT user_id FROM api_keys WHERE id = 'k'": "api_keys_id",
        "SELECT user_id FROM jobs WHERE id = 'j' AND status = 'claimed' AND claimed_by = 'w'": "jobs_claimed",
    }
    for sql, index in plans.items():
        assert index in conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchone()[3]

    await version9.check_upgraded(upgraded, filled)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    await upgraded.close()


async def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.open()
    await store.close()

    def broken(cur):
        cur.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(
        sqlite_module, "MIGRATIONS", [*sqlite_module.MIGRATIONS, Migration(99, "broken", broken)]
    )
    with pytest.raises(RuntimeError, match="disk on fire"):
        await SQLiteStore(path).open()
    monkeypatch.undo()
    again = SQLiteStore(path)
    await again.open()
    assert 99 not in await again.schema_versions()
    assert again._conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    await again.close()


async def test_facts_survive_a_reopen(tmp_path, embedder):
    path = tmp_path / "m.db"
    first = await Memory(SQLiteStore(path), embedder).open()
    alice = Scope((await first.accounts.user("alice")).id)
    await first.add(alice, "I live in Lisbon")
    await first.close()
    second = await Memory(SQLiteStore(path), embedder).open()
    assert texts(await second.recall("Lisbon", alice)) == ["I live in Lisbon"]
    assert (await second.verify_audit(alice.user_id)).ok
    await second.close()


@pytest.mark.slow
async def test_common_words_are_left_out_of_full_text_search_on_a_large_store(memory, alice):
    await bulk_add(memory, alice, unrelated_facts(2100))  # each thing is in a tenth of them
    await memory.add(alice, "My niece is called Zephyrine")

    found = await memory.store.lexical(alice, "telescope for Zephyrine", 20)
    assert texts([f.fact for f in found]) == ["My niece is called Zephyrine"]
    # only common words: nothing to discriminate with, so the arm stays silent
    assert await memory.store.lexical(alice, "telescope", 20) == []


@pytest.mark.slow
async def test_a_words_document_count_is_kept_a_minute_then_read_again(memory, alice, monkeypatch):
    """The lexical arm keeps each word's stem and document count for TTL_SECONDS: a word that has
    since become common is still searched until then, and left out after."""
    from mnemo.store.sqlite_terms import TTL_SECONDS

    await bulk_add(memory, alice, unrelated_facts(2100))
    assert await memory.store.lexical(alice, "quokka", 20) == []  # rare: searched, and read into the cache
    await bulk_add(memory, alice, [f"I saw quokka number {i} on the island" for i in range(300)])

    found = await memory.store.lexical(alice, "quokka", 20)
    assert len(found) == 20 and all("quokka" in f.fact.text for f in found)  # still the minute-old count
    terms = memory.store._terms
    later = terms.clock() + TTL_SECONDS + 1
    monkeypatch.setattr(terms, "clock", lambda: later)
    assert await memory.store.lexical(alice, "quokka", 20) == []  # 300 of 2,400 facts: common now


async def test_a_small_store_searches_every_word(memory, alice):
    await bulk_add(memory, alice, unrelated_facts(200))
    found = await memory.store.lexical(alice, "telescope", 50)
    assert len(found) == 20 and all("telescope" in f.fact.text for f in found)


async def test_a_purged_text_is_gone_from_the_database_files(tmp_path, embedder):
    """Not in the database, its free pages, the full-text index or the write-ahead log: the
    store overwrites what it deletes (secure_delete, FTS5's secure-delete) and empties the
    log after a purge."""
    memory = await Memory(SQLiteStore(tmp_path / "mnemo.db"), embedder).open()
    alice = Scope((await memory.accounts.user("alice")).id)
    await bulk_add(memory, alice, unrelated_facts(50))
    pin = await memory.add(alice, "My bank PIN is 442618")
    await memory.edit(alice, pin.id, "My bank PIN is 442618, the blue card")

    # six digits: ids, hashes and vectors in the files are random, and a four-digit needle
    # turned up in them now and then
    def files_holding(needle: bytes) -> list[str]:
        return [p.name for p in tmp_path.iterdir() if p.is_file() and needle in p.read_bytes()]

    assert files_holding(b"442618")  # the check can see it while it is there
    await memory.purge(alice, pin.id)
    assert files_holding(b"442618") == [] and files_holding(b"blue card") == []
    assert (await memory.verify_audit(alice.user_id)).ok
    await memory.close()
    assert files_holding(b"442618") == []


async def test_a_reader_holding_the_log_back_is_said_and_the_log_is_emptied_once_it_lets_go(
    tmp_path, embedder, caplog
):
    """Another process (here another connection) in a read transaction keeps the write-ahead log's
    frames: the erasure's checkpoint cannot empty it, the text is still in the -wal file, the
    erasure says so and logs it; at the store's next call after the reader let go, the log is
    emptied and the text has left every file."""
    memory = await Memory(SQLiteStore(tmp_path / "mnemo.db"), embedder).open()
    alice = Scope((await memory.accounts.user("alice")).id)
    pin = await memory.add(alice, "My bank PIN is 442618")
    wal = tmp_path / "mnemo.db-wal"

    def files_holding(needle: bytes) -> list[str]:
        return [p.name for p in tmp_path.iterdir() if p.is_file() and needle in p.read_bytes()]

    reader = sqlean.connect(str(tmp_path / "mnemo.db"), isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM facts").fetchone()  # a snapshot the log must keep
    assert await memory.lingering() is None
    await memory.purge(alice, pin.id)
    assert "mnemo.db-wal" in files_holding(b"442618")
    lingering = await memory.lingering()
    assert lingering is not None and "another process is reading" in lingering and "mnemo.db-wal" in lingering
    assert "still holds an erased text" in caplog.text
    await memory.list(alice)  # tried again too soon, and the reader is still there
    assert await memory.lingering() == lingering

    reader.execute("COMMIT")
    reader.close()
    memory.store._next_try = 0.0  # (rather than waiting CHECKPOINT_RETRY)
    await memory.list(alice)  # any call of the store tries again
    assert await memory.lingering() is None
    assert wal.stat().st_size == 0 and files_holding(b"442618") == []
    await memory.close()


async def test_each_kind_of_erasure_leaves_nothing_in_the_database_files(tmp_path, embedder):
    """A memory with the message it was learnt from, a whole conversation, what was ticked about
    a subject, and everything: none of their words is left in the database, its free pages or
    its log."""
    memory = await Memory(SQLiteStore(tmp_path / "mnemo.db"), embedder).open()
    alice = Scope((await memory.accounts.user("alice")).id)
    await bulk_add(memory, alice, unrelated_facts(20))
    at = memory.clock()
    said = {
        "c1": "My bank PIN is 442618",
        "c2": "I fly to Reykjavik on May 3",
        "c3": "My locker code is 771305",
        "c4": "My passport number is X5519027",
    }
    for conversation, text in said.items():
        await memory.store.save_messages(alice, conversation, [Message("user", text)], at)
    pin = await memory.add(alice, "My bank PIN is 442618")
    locker = await memory.add(alice, "My locker code is 771305")

    def files_holding(needle: bytes) -> list[str]:
        return [p.name for p in tmp_path.iterdir() if p.is_file() and needle in p.read_bytes()]

    needles = [b"442618", b"Reykjavik", b"771305", b"X5519027"]
    assert all(files_holding(n) for n in needles)  # the check sees them while they are there
    await memory.purge(alice, pin.id)
    assert files_holding(b"442618") == []
    await memory.erase_conversation(alice.user_id, "c2")
    assert files_holding(b"Reykjavik") == []
    _, messages = await memory.about(alice.user_id, "locker code")
    await memory.erase_selection(alice.user_id, [locker.id], [m for _, m, _ in messages])
    assert files_holding(b"771305") == []
    assert files_holding(b"X5519027")
    await memory.erase_everything(alice.user_id)
    assert files_holding(b"X5519027") == []
    await memory.close()
    assert not any(files_holding(n) for n in needles)


async def test_a_recall_is_one_trip_to_the_store_thread(memory, alice, monkeypatch):
    """Every arm's search of a recall runs in one call of the store's executor: on one connection
    they run one after another anyway, and each call is a thread hand-off."""
    await bulk_add(memory, alice, unrelated_facts(30))
    await memory.add(alice, "My niece is called Zephyrine")
    vector = (await memory.embedder.embed_queries(["what is my niece called, Zephyrine?"]))[0]
    store = memory.store
    trips = []
    run = store._run

    async def counted(fn, *args):
        trips.append(fn)
        return await run(fn, *args)

    monkeypatch.setattr(store, "_run", counted)
    hits = await memory.recaller.recall(alice, "what is my niece called, Zephyrine?", vector=vector)

    assert texts(hits)[0] == "My niece is called Zephyrine"
    assert len(trips) == 1


async def test_a_person_holding_most_facts_is_searched_without_the_owner_token_and_the_same(
    memory, alice, bob, monkeypatch
):
    """For whoever holds at least half of all facts the full-text search leaves their token out of
    the MATCH (bm25 would count all their facts for it) and keeps to them by the join's user rule:
    the same facts with the same scores, and none of anyone else's."""
    from mnemo.store import sqlite_terms

    await bulk_add(memory, alice, [f"My telescope number {i} points at Vega" for i in range(40)])
    await bulk_add(memory, bob, [f"Bob's telescope number {i} points at Vega" for i in range(10)])
    store = memory.store

    def fresh(share: float) -> None:
        monkeypatch.setattr(sqlite_terms, "OWNER_SHARE", share)
        store._terms = sqlite_terms.TermStats()

    fresh(0.5)
    assert store._terms.holds_most(store._conn, alice.user_id)
    assert not store._terms.holds_most(store._conn, bob.user_id)
    without_token = await store.lexical(alice, "telescope Vega", 100)
    fresh(2.0)  # nobody holds twice everything: the token always in the MATCH
    with_token = await store.lexical(alice, "telescope Vega", 100)

    assert len(without_token) == 40 and all(s.fact.text.startswith("My telescope") for s in without_token)
    assert [(s.fact.id, round(s.score, 9)) for s in without_token] == [
        (s.fact.id, round(s.score, 9)) for s in with_token
    ]
    fresh(0.0)  # everybody "holds most": bob too is kept to his own by the user rule
    assert {s.fact.text[:5] for s in await store.lexical(bob, "telescope Vega", 100)} == {"Bob's"}
