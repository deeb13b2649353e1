"""The SQLite store's own duties: migrations, WAL, durability across reopen."""

from __future__ import annotations

import pytest
import sqlean

from mnemo.domain import Scope
from mnemo.memory import Memory
from mnemo.store import sqlite as sqlite_module
from mnemo.store.migrate import Migration
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import bulk_add, texts, unrelated_facts
from tests.store import legacy


@pytest.fixture
def backend() -> str:
    """This module is about the SQLite store alone (tests/store/test_postgres.py has its twin)."""
    return "sqlite"


async def test_a_fresh_database_records_its_migrations(store):
    assert store.schema_versions() == [m.version for m in sqlite_module.MIGRATIONS]
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
        Migration(len(sqlite_module.MIGRATIONS) + 1, "nickname", add_nickname),
    ]
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", newer)
    upgraded = Memory(SQLiteStore(path), embedder)
    await upgraded.open()
    assert upgraded.store.schema_versions() == [m.version for m in newer]
    columns = [r[1] for r in upgraded.store._conn.execute("PRAGMA table_info(users)")]
    assert "nickname" in columns
    assert texts(await upgraded.recall("where do I live", alice)) == ["I live in Lisbon"]
    await upgraded.close()


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
    assert upgraded.store.schema_versions() == [m.version for m in sqlite_module.MIGRATIONS]
    (valid_from,) = upgraded.store._conn.execute(
        "SELECT valid_from FROM facts WHERE id = ?", (legacy.LISBON,)
    )
    assert valid_from == ("0874-06-01T00:00:00.000000Z",)
    await legacy.check_upgraded(upgraded, guessable)
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
    assert 99 not in again.schema_versions()
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


async def test_common_words_are_left_out_of_full_text_search_on_a_large_store(memory, alice):
    await bulk_add(memory, alice, unrelated_facts(2100))  # each thing is in a tenth of them
    await memory.add(alice, "My niece is called Zephyrine")

    found = await memory.store.lexical(alice, "telescope for Zephyrine", 20)
    assert texts([f.fact for f in found]) == ["My niece is called Zephyrine"]
    # only common words: nothing to discriminate with, so the arm stays silent
    assert await memory.store.lexical(alice, "telescope", 20) == []


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
    pin = await memory.add(alice, "My bank PIN is 4426")
    await memory.edit(alice, pin.id, "My bank PIN is 4426, the blue card")

    def files_holding(needle: bytes) -> list[str]:
        return [p.name for p in tmp_path.iterdir() if p.is_file() and needle in p.read_bytes()]

    assert files_holding(b"4426")  # the check can see it while it is there
    await memory.purge(alice, pin.id)
    assert files_holding(b"4426") == [] and files_holding(b"blue card") == []
    assert (await memory.verify_audit(alice.user_id)).ok
    await memory.close()
    assert files_holding(b"4426") == []
