"""The blocking facade, settings from a TOML file, and wiring from settings."""

from __future__ import annotations

import pytest

from mnemo import Scope, SyncMemory, Turn
from mnemo.build import build_chat, build_embedder, build_store, shown_url, sqlite_path
from mnemo.domain import MemoryMode
from mnemo.memory import Memory
from mnemo.providers.chat import OpenAIChatModel
from mnemo.providers.embed import LocalEmbedder, OpenAIEmbedder
from mnemo.settings import Settings
from mnemo.store.postgres import PostgresStore
from mnemo.store.sqlite import SQLiteStore
from tests.helpers import texts


def test_the_sync_facade_forwards_every_coroutine(make_store, embedder):
    with SyncMemory.wrap(Memory(make_store(), embedder)) as memory:
        alice = Scope(memory.user("alice").id)
        fact = memory.add(alice, "I live in Lisbon")
        memory.edit(alice, fact.id, "I live in Porto")
        report = memory.remember(Turn.of(alice, ("user", "Remember that I have a cat named Miso")))
        assert report.problems == []
        assert texts(memory.recall("where do I live?", alice))[0] == "I live in Porto"
        assert [e.action for e in memory.history(alice, fact.id)] == ["create", "edit"]
        assert memory.verify_audit(alice.user_id).ok
        assert memory.remember.__doc__ == Memory.remember.__doc__


def test_settings_come_from_the_environment_then_a_toml_file(tmp_path, monkeypatch):
    config = tmp_path / "mnemo.toml"
    config.write_text(
        'llm_model = "from-toml"\nmemory_mode = "enabled_default_off"\n[recall]\nmax_facts = 7\n'
    )
    monkeypatch.setenv("MNEMO_LLM_MODEL", "from-env")
    monkeypatch.setenv("MNEMO_WRITE__EXCHANGES", "3")
    settings = Settings.load(config, data_dir=tmp_path)
    assert settings.llm_model == "from-env"
    assert settings.recall.max_facts == 7 and settings.write.exchanges == 3
    assert settings.memory_mode == MemoryMode.ENABLED_DEFAULT_OFF
    assert settings.database_path == tmp_path / "mnemo.db"
    with pytest.raises(FileNotFoundError):
        Settings.load(tmp_path / "missing.toml")


def test_wiring_follows_the_settings(tmp_path):
    local = Settings(data_dir=tmp_path)
    assert build_chat(local) is None
    assert isinstance(build_embedder(local).inner, LocalEmbedder)
    assert sqlite_path(local) == str(tmp_path / "mnemo.db")
    remote = Settings(
        data_dir=tmp_path,
        llm_base_url="http://127.0.0.1:9/v1",
        llm_model="m",
        embed_base_url="http://127.0.0.1:9/v1",
        embed_model="e",
        database_url="sqlite:////var/tmp/x.db",
    )
    assert isinstance(build_chat(remote), OpenAIChatModel)
    assert isinstance(build_embedder(remote).inner, OpenAIEmbedder)
    assert sqlite_path(remote) == "/var/tmp/x.db"
    with pytest.raises(ValueError, match="unsupported database URL"):
        sqlite_path(Settings(database_url="mysql://x"))
    assert isinstance(build_store(local), SQLiteStore)
    for url in ("postgresql://mnemo:secret@db.internal/mnemo", "postgres://db.internal/mnemo"):
        assert isinstance(build_store(Settings(database_url=url)), PostgresStore)
    assert (
        shown_url("postgresql://mnemo:secret@db.internal/mnemo") == "postgresql://mnemo:***@db.internal/mnemo"
    )


async def test_a_remote_embedder_works_end_to_end(make_store, scripted_llm):
    embedder = OpenAIEmbedder(scripted_llm.base_url, "k", "scripted-embed", dimensions=64)
    memory = await Memory(make_store(), embedder).open()
    alice = Scope((await memory.accounts.user("alice")).id)
    await memory.add(alice, "I keep bees on my balcony")
    await memory.add(alice, "My sister lives in Porto")
    hits = await memory.recall("bees", alice, arms=("semantic",))
    assert texts(hits)[0] == "I keep bees on my balcony"
    assert (await memory.list(alice))[0].embedding_model == "scripted-embed"
    await memory.close()
