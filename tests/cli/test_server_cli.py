"""`mnemo users create`, `mnemo worker --once` and `mnemo serve`'s refusals, in process.

(`mnemo serve` and `mnemo worker` running as real processes: tests/server/test_crash.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from mnemo.cli.main import app
from mnemo.domain import JobStatus, Scope, Turn
from mnemo.memory import Memory
from tests.helpers import in_store


def mnemo(data_dir: Path, *args: str, database_url: str | None = None) -> Result:
    env = {"MNEMO_DATABASE_URL": database_url} if database_url else {}
    return CliRunner().invoke(app, ["--data-dir", str(data_dir), *args], env=env, catch_exceptions=False)


def test_users_create_prints_a_working_key_once_and_refuses_a_taken_name(tmp_path, embedder, database_url):
    created = mnemo(tmp_path, "users", "create", "bob", database_url=database_url)
    assert created.exit_code == 0, created.output
    token = created.stdout.split()[-1]
    assert "API key" in created.stdout and token.startswith("mnemo_")

    async def who(memory: Memory):
        return await memory.accounts.authenticate(token), await memory.accounts.find_user("local")

    user, local = in_store(tmp_path, embedder, who, database_url)
    assert user is not None and user.name == "bob"
    assert local is None  # creating a user makes no other one on the way

    as_json = json.loads(
        mnemo(tmp_path, "users", "create", "carol", "--json", database_url=database_url).stdout
    )
    assert as_json["user"]["name"] == "carol" and as_json["token"].startswith(f"mnemo_{as_json['key_id']}_")

    taken = mnemo(tmp_path, "users", "create", "bob", database_url=database_url)
    assert taken.exit_code == 1 and taken.stderr.startswith("name_taken: A user named")
    empty = mnemo(tmp_path, "users", "create", "  ", database_url=database_url)
    assert empty.exit_code == 2 and empty.stderr.startswith("invalid_input: ") and "name" in empty.stderr


def test_worker_once_learns_from_the_queued_turns(tmp_path, embedder, database_url):
    async def queue(memory: Memory):
        user = await memory.accounts.user("local")
        return await memory.submit(Turn.of(Scope(user.id), ("user", "Remember that I live in Lisbon")))

    job = in_store(tmp_path, embedder, queue, database_url)
    done = mnemo(tmp_path, "worker", "--once", database_url=database_url)
    assert done.exit_code == 0 and "Processed 1 job." in done.stdout, done.output
    assert "Processed 0 jobs." in mnemo(tmp_path, "worker", "--once", database_url=database_url).stdout

    async def after(memory: Memory):
        return await memory.job(job.user_id, job.id), await memory.list(Scope(job.user_id))

    finished, facts = in_store(tmp_path, embedder, after, database_url)
    # no chat model: the explicit request is learnt, and the turn waits for a model
    assert finished.status == JobStatus.WAITING and [f.text for f in facts] == ["I live in Lisbon"]


def test_serve_refuses_bad_settings_before_starting(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_DATABASE_URL", "mysql://nowhere/mnemo")
    refused = mnemo(tmp_path, "serve", "--port", "1")
    assert refused.exit_code == 2 and "unsupported database URL" in refused.stderr
    assert mnemo(tmp_path, "serve", "--port", "70000").exit_code == 2
