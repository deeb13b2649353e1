"""`mnemo reindex` through the command line, on both backends: facts embedded by another model
get the configured (local) model's vectors, a second run has nothing to do, --prune drops the old."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mnemo.cli.main import app
from mnemo.domain import Scope
from mnemo.recall.recaller import Recaller
from mnemo.settings import Settings
from tests.fakes.embedders import ProjectedEmbedder
from tests.helpers import bulk_add, in_store, texts

ALICE = ["I play the cello", "My sister Ana lives in Porto", "I am allergic to peanuts", "I grew up in Lyon"]
BOB = ["I drive a green tractor"]


@pytest.fixture
def old(embedder) -> ProjectedEmbedder:
    return ProjectedEmbedder(embedder)


@pytest.fixture
def data_dir(tmp_path: Path, old, database_url) -> Path:
    """A database whose facts only the old model embedded."""
    data_dir = tmp_path / "data"

    async def seed(memory):
        for name, said in (("alice", ALICE), ("bob", BOB)):
            await bulk_add(memory, Scope((await memory.accounts.user(name)).id), said)

    in_store(data_dir, old, seed, database_url)
    return data_dir


@pytest.fixture
def mnemo(data_dir: Path, database_url: str | None):
    runner = CliRunner()
    env = {"COLUMNS": "200", **({"MNEMO_DATABASE_URL": database_url} if database_url else {})}

    def invoke(*args: str) -> Result:
        return runner.invoke(app, ["--data-dir", str(data_dir), *args], env=env, catch_exceptions=False)

    return invoke


def models(data_dir, embedder, database_url) -> dict[str, dict[str, int]]:
    async def look(memory):
        return {
            name: await memory.store.vector_models((await memory.accounts.user(name)).id)
            for name in ("alice", "bob")
        }

    return in_store(data_dir, embedder, look, database_url)


@pytest.mark.slow
def test_the_global_user_chooses_whose_facts_are_embedded(mnemo, data_dir, embedder, old, database_url):
    result = mnemo("--user", "bob", "reindex", "--json")
    assert result.exit_code == 0, result.output
    assert [u["user"] for u in json.loads(result.stdout)["users"]] == ["bob"]
    assert models(data_dir, embedder, database_url)["alice"] == {old.model_name: len(ALICE)}
    both = mnemo("--user", "bob", "reindex", "--users", "alice")
    assert both.exit_code == 2 and "not both" in both.stderr


@pytest.mark.slow
def test_reindex_switches_models(mnemo, data_dir, embedder, old, database_url):
    result = mnemo("reindex", "--users", "alice", "--batch-size", "3", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["model"] == embedder.model_name and report["complete"]
    assert report["embedded"] == len(ALICE) and report["batches"] == 2
    assert report["users"][0]["vectors"] == {embedder.model_name: len(ALICE), old.model_name: len(ALICE)}
    assert models(data_dir, embedder, database_url)["bob"] == {old.model_name: 1}

    # recall through the new model finds alice's facts; the old model's still serve
    async def recall(memory):
        scope = Scope((await memory.accounts.user("alice")).id)
        found = {}
        for model in (embedder, old):
            recaller = Recaller(memory.store, model, Settings().recall, memory.clock)
            found[model.model_name] = texts(
                await recaller.recall(scope, "peanut allergy", arms=("semantic",))
            )
        return found

    for found in in_store(data_dir, embedder, recall, database_url).values():
        assert "I am allergic to peanuts" in found[:2]

    result = mnemo("reindex", "--json")  # everyone: only bob's fact is left
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [(u["user"], u["embedded"]) for u in report["users"]] == [("alice", 0), ("bob", 1)]

    result = mnemo("reindex", "--prune")
    assert result.exit_code == 0, result.output
    assert "every fact has a vector" in result.output
    assert models(data_dir, embedder, database_url) == {
        "alice": {embedder.model_name: len(ALICE)},
        "bob": {embedder.model_name: 1},
    }


def test_reindex_unknown_user(mnemo):
    result = mnemo("reindex", "--users", "nobody")
    assert result.exit_code != 0 and "nobody" in result.output
    result = mnemo("reindex", "--users", " , ")
    assert result.exit_code != 0


GERMAN = [
    "Ich spiele donnerstags Cello in einem Laienorchester.",
    "Meine Schwester Miriam arbeitet als Krankenschwester in Salzburg.",
    "Ich bin allergisch gegen Haselnüsse.",
    "Ich bin in Linz aufgewachsen.",
]


@pytest.mark.slow
def test_a_store_moves_to_the_multilingual_model(tmp_path: Path, embedder, database_url):
    """Written under MiniLM, a German memory is reindexed for multilingual-e5; a question in
    English then finds the German fact through the semantic arm, which it could not before."""
    data_dir = tmp_path / "data"

    async def seed(memory):
        await bulk_add(memory, Scope((await memory.accounts.user("alice")).id), GERMAN)

    in_store(data_dir, embedder, seed, database_url)
    env = {"COLUMNS": "200", "MNEMO_EMBED_LOCAL": "multilingual-e5"}
    env |= {"MNEMO_DATABASE_URL": database_url} if database_url else {}

    def mnemo(*args: str) -> Result:
        return CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env=env, catch_exceptions=False)

    def search() -> list[dict]:
        result = mnemo("--user", "alice", "search", "Which instrument do I play?", "--json", "--limit", "2")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert not any("semantic" in hit["why"] for hit in search())  # no e5 vector yet
    result = mnemo("reindex", "--prune", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"] == "multilingual-e5-small-q4"
    (first, *_) = search()
    assert first["fact"]["text"] == GERMAN[0] and "semantic" in first["why"]
