"""`mnemo doctor` and unknown settings, as the installed script, against a scripted chat model."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from mnemo.store.postgres import AT_REST, PostgresStore
from mnemo.store.sqlite import SQLiteStore
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers import async_commits_on_a_worker
from tests.postgres_server import SessionPostgres
from tests.selection import ANY_POSTGRESQL
from tests.server.processes import MNEMO, free_port

pytestmark = pytest.mark.slow  # each starts the installed script


def mnemo(*args: str, env: dict[str, str], data_dir: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("MNEMO_")}
    return subprocess.run(
        [MNEMO, "--data-dir", str(data_dir), *args],
        env={**clean, "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def checks(result: subprocess.CompletedProcess[str]) -> dict[str, list[dict]]:
    by_check: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout)["checks"]:
        by_check.setdefault(finding["check"], []).append(finding)
    return by_check


def test_a_working_setup_passes_every_check(tmp_path: Path, scripted_llm: ScriptedOpenAI):
    data = tmp_path / "data"
    env = {"MNEMO_LLM_BASE_URL": scripted_llm.base_url, "MNEMO_LLM_MODEL": "scripted-model"}
    assert mnemo("add", "I live in Porto", env={}, data_dir=data).returncode == 0
    scripted_llm.reply_json({"ok": True})

    result = mnemo("doctor", "--json", env=env, data_dir=data)

    assert result.returncode == 0, result.stdout + result.stderr
    found = checks(result)
    assert json.loads(result.stdout)["ok"] is True
    assert {c: [f["status"] for f in fs] for c, fs in found.items()} == {
        "settings": ["ok"],
        "data_dir": ["ok"],
        "disk": ["ok"],
        "database": ["ok"],
        "embedder": ["ok"],
        "chat_model": ["ok"],
    }
    assert "384 dimensions" in found["embedder"][0]["message"]
    assert "JSON schema" in found["chat_model"][0]["message"]
    (request,) = scripted_llm.chat_requests()
    assert request["response_format"]["type"] == "json_schema"


def test_a_second_embedder_is_checked_beside_the_first(tmp_path: Path):
    result = mnemo("doctor", "--json", env={"MNEMO_EMBED_SECOND": "multilingual-e5"}, data_dir=tmp_path / "d")
    found = checks(result)
    assert [f["status"] for f in found["second_embedder"]] == ["ok"], result.stdout
    message = found["second_embedder"][0]["message"]
    assert "multilingual-e5-small-q4: one sentence in 384 dimensions" in message
    # beside another first embedder it is no setting doctor can use
    env = {"MNEMO_EMBED_SECOND": "multilingual-e5", "MNEMO_EMBED_LOCAL": "multilingual-e5"}
    found = checks(mnemo("doctor", "--json", env=env, data_dir=tmp_path / "e"))
    assert "beside the local all-MiniLM-L6-v2 only" in found["settings"][0]["message"]
    assert "second_embedder" not in found


def test_a_misspelt_variable_and_an_unreachable_model_fail_with_their_fixes(tmp_path: Path):
    data = tmp_path / "data"
    env = {
        "MNEMO_LLM_MODLE": "gpt-4o-mini",
        "MNEMO_LLM_MODEL": "m",
        "MNEMO_LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
        "COLUMNS": "40",  # narrow: each finding is still one line (a pipe gets them whole)
    }

    result = mnemo("doctor", env=env, data_dir=data)

    assert result.returncode == 1
    out = result.stdout
    assert "MNEMO_LLM_MODLE (environment) is not a setting; did you mean MNEMO_LLM_MODEL?" in out
    assert "fix: rename it MNEMO_LLM_MODEL, or remove it" in out
    assert "is unreachable" in out and "fix: check MNEMO_LLM_BASE_URL" in out
    # nothing created: the data directory and the database are only reported missing
    assert f"no database at {data / 'mnemo.db'} yet" in out
    assert not data.exists()


def test_a_model_without_json_schema_support_is_a_warning(tmp_path: Path, scripted_llm: ScriptedOpenAI):
    scripted_llm.reject_response_format({"json_schema"})
    scripted_llm.reply_json({"ok": True})
    env = {"MNEMO_LLM_BASE_URL": scripted_llm.base_url, "MNEMO_LLM_MODEL": "scripted-model"}

    result = mnemo("doctor", "--json", env=env, data_dir=tmp_path / "data")

    assert result.returncode == 0, result.stdout
    (chat,) = checks(result)["chat_model"]
    assert chat["status"] == "warn" and "JSON mode only" in chat["message"]


def test_a_reply_that_is_not_json_fails(tmp_path: Path, scripted_llm: ScriptedOpenAI):
    scripted_llm.reply("Sure! Here you go: ok")
    env = {"MNEMO_LLM_BASE_URL": scripted_llm.base_url, "MNEMO_LLM_MODEL": "scripted-model"}

    result = mnemo("doctor", "--json", env=env, data_dir=tmp_path / "data")

    assert result.returncode == 1
    (chat,) = checks(result)["chat_model"]
    assert chat["status"] == "fail" and "did not answer in JSON" in chat["message"]


def test_files_open_to_others_and_bad_toml_keys_are_named(tmp_path: Path):
    data = tmp_path / "data"
    assert mnemo("add", "I live in Porto", env={}, data_dir=data).returncode == 0
    data.chmod(0o755)
    (data / "mnemo.db").chmod(0o644)
    config = tmp_path / "mnemo.toml"
    config.write_text("[recall]\nmax_fact = 3\n")

    result = mnemo("--config", str(config), "doctor", "--json", env={}, data_dir=data)

    assert result.returncode == 1
    found = checks(result)
    assert [f["message"] for f in found["settings"]] == [
        f"recall.max_fact ({config}) is not a setting; did you mean recall.max_facts?"
    ]
    assert [(f["status"], f["fix"]) for f in found["data_dir"]] == [
        ("warn", f"chmod 700 {data}"),
        ("warn", f"chmod 600 {data / 'mnemo.db'} (mnemo also tightens it when it opens the database)"),
    ]


def test_an_invalid_value_fails_the_settings_check_alone(tmp_path: Path):
    result = mnemo("doctor", "--json", env={"MNEMO_PORT": "eighty"}, data_dir=tmp_path / "data")

    assert result.returncode == 1
    found = checks(result)
    assert list(found) == ["settings"]
    assert found["settings"][0]["message"].startswith("port: ")


@pytest.mark.parametrize("command", [["serve"], ["list"], ["worker", "--once"]])
def test_every_command_refuses_an_unknown_setting(tmp_path: Path, command: list[str]):
    env = {"MNEMO_LLM_MODLE": "gpt-4o-mini", "MNEMO_LONG_TESTS": "1", "MNEMO_TEST_DATABASE_URL": "x"}

    result = mnemo(*command, env=env, data_dir=tmp_path / "data")

    assert result.returncode == 2
    assert "MNEMO_LLM_MODLE (environment) is not a setting; did you mean MNEMO_LLM_MODEL?" in result.stderr
    assert "LONG_TESTS" not in result.stderr and "TEST_DATABASE_URL" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_a_database_a_later_mnemo_migrated_fails_the_check(tmp_path: Path):
    data = tmp_path / "data"
    assert mnemo("add", "I live in Porto", env={}, data_dir=data).returncode == 0
    (database_file,) = data.glob("*.db")
    later = SQLiteStore.newest_schema + 1
    with sqlite3.connect(database_file) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'later', '2027-01-01')",
            (later,),
        )

    result = mnemo("doctor", "--json", env={}, data_dir=data)

    (database,) = checks(result)["database"]
    assert result.returncode == 1 and database["status"] == "fail", database
    assert (
        f"(version {later}) is newer than this mnemo's ({SQLiteStore.newest_schema})" in database["message"]
    )


@ANY_POSTGRESQL
def test_doctor_opens_postgresql_and_names_a_database_it_cannot_reach(tmp_path: Path, database_url: str):
    data = tmp_path / "data"
    result = mnemo("doctor", "--json", env={"MNEMO_DATABASE_URL": database_url}, data_dir=data)
    (database,) = checks(result)["database"]
    assert database["status"] == "ok", database
    assert f"schema current (version {PostgresStore.newest_schema})" in database["message"]
    # the one procedure that takes erased texts out of the table files (tests/store/test_postgres.py)
    assert database["fix"].endswith(AT_REST)

    gone = f"postgresql://mnemo@127.0.0.1:{free_port()}/nowhere"
    result = mnemo("doctor", "--json", env={"MNEMO_DATABASE_URL": gone}, data_dir=data)
    (database,) = checks(result)["database"]
    assert result.returncode == 1 and database["status"] == "fail"
    assert "MNEMO_DATABASE_URL" in database["fix"]


@pytest.mark.backend("citus")
@pytest.mark.citus
def test_doctor_warns_of_a_worker_that_acknowledges_commits_before_writing_them(
    tmp_path: Path, citus_store_url: str
):
    """A shard moved off such a worker can lose acknowledged writes (docs/scaling.md)."""
    env = {"MNEMO_DATABASE_URL": SessionPostgres.as_url(citus_store_url)}
    with async_commits_on_a_worker(citus_store_url) as (at, others):
        result = mnemo("doctor", "--json", env=env, data_dir=tmp_path / "data")
    (database,) = checks(result)["database"]
    assert database["status"] == "warn", database
    assert database["message"].endswith(
        f"; synchronous_commit is off on {at}, where writes acknowledged while Citus moves a shard can"
        " be lost"
    )
    assert others and not [o for o in others if o in database["message"]]
    assert "docs/scaling.md" in database["fix"]
