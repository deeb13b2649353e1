"""Getting back in with the installed `mnemo` script, where the database is: `mnemo users list`
and `mnemo keys create|list|revoke`, on both backends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemo.accounts import AccountDisabled
from mnemo.cli.main import app
from mnemo.memory import Memory
from tests.helpers import in_store

SCRIPT = Path(sys.executable).parent / "mnemo"

pytestmark = pytest.mark.slow  # stores made and read again, the script run as a process


class Mnemo:
    """`mnemo` over one test's database: in this process (typer's runner), or as the installed
    script in a process of its own (`script=True`: slower, and what a person runs)."""

    def __init__(self, data_dir: Path, database_url: str | None, *, script: bool = False) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
        self.env["MNEMO_DATA_DIR"] = str(data_dir)
        if database_url:
            self.env["MNEMO_DATABASE_URL"] = database_url
        self.script = script

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        if self.script:
            return subprocess.run(
                [str(SCRIPT), *args], env=self.env, capture_output=True, text=True, timeout=120
            )
        mnemo_env = {k: v for k, v in self.env.items() if k.startswith("MNEMO_")}
        with pytest.MonkeyPatch.context() as mp:
            for key in [k for k in os.environ if k.startswith("MNEMO_")]:
                mp.delenv(key)
            done = CliRunner().invoke(app, list(args), env=mnemo_env, catch_exceptions=False)
        return subprocess.CompletedProcess(args, done.exit_code, done.stdout, done.stderr)

    def json(self, *args: str):
        done = self(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def mnemo(tmp_path, database_url) -> Mnemo:
    return Mnemo(tmp_path, database_url)


@pytest.fixture
def script(tmp_path, database_url) -> Mnemo:
    return Mnemo(tmp_path, database_url, script=True)


def who(tmp_path, embedder, database_url, token: str) -> str | None:
    """The name of the user `token` lets in now, if any."""

    async def work(memory: Memory):
        user = await memory.accounts.authenticate(token)
        return user.name if user else None

    return in_store(tmp_path, embedder, work, database_url)


def test_a_person_who_lost_their_key_gets_a_new_one_and_the_old_one_revoked(
    script, tmp_path, embedder, database_url
):
    mnemo = script  # the installed script, as a person runs it
    alice = mnemo.json("users", "create", "Alïce ✓")
    bob = mnemo.json("users", "create", "bob")

    listed = mnemo.json("users", "list")
    assert [(u["name"], u["id"], u["live_keys"], u["memory_enabled"]) for u in listed] == [
        ("Alïce ✓", alice["user"]["id"], 1, True),
        ("bob", bob["user"]["id"], 1, True),
    ]
    assert all(u["created_at"] for u in listed)
    shown = mnemo("users", "list")
    assert shown.returncode == 0 and "Alïce ✓" in shown.stdout and bob["user"]["id"] in shown.stdout

    made = mnemo("keys", "create", "--user", "Alïce ✓", "--name", "new laptop")
    assert made.returncode == 0, made.stderr
    token = made.stdout.split()[-1]
    assert "shown once" in made.stdout and token.startswith("mnemo_")
    assert who(tmp_path, embedder, database_url, token) == "Alïce ✓"

    keys = mnemo.json("keys", "list", "--user", "Alïce ✓")
    assert [(k["id"], k["name"], k["revoked_at"]) for k in keys] == [
        (alice["key_id"], "first key", None),
        (token.split("_")[1], "new laptop", None),
    ]
    table = mnemo("keys", "list", "--user", "Alïce ✓").stdout
    for secret in (token, token.split("_", 2)[2], alice["token"].split("_", 2)[2]):
        assert secret not in table and secret not in json.dumps(keys)

    revoked = mnemo.json("keys", "revoke", alice["key_id"], "--user", "Alïce ✓")
    assert revoked["id"] == alice["key_id"] and revoked["revoked_at"]
    assert who(tmp_path, embedder, database_url, alice["token"]) is None  # the lost key is dead
    assert who(tmp_path, embedder, database_url, token) == "Alïce ✓"
    assert [u["live_keys"] for u in mnemo.json("users", "list")] == [1, 1]
    again = mnemo("keys", "revoke", alice["key_id"], "--user", "Alïce ✓")
    assert again.returncode == 0  # revoking twice keeps the first time


def test_another_users_key_is_no_such_key_and_stays_alive(mnemo, tmp_path, embedder, database_url):
    mnemo.json("users", "create", "alice")
    bob = mnemo.json("users", "create", "bob")

    refused = mnemo("keys", "revoke", bob["key_id"], "--user", "alice")
    assert refused.returncode == 1
    assert f"No API key {bob['key_id']}" in refused.stderr and "Traceback" not in refused.stderr
    assert who(tmp_path, embedder, database_url, bob["token"]) == "bob"
    assert [k["revoked_at"] for k in mnemo.json("keys", "list", "--user", "bob")] == [None]

    nonsense = mnemo("keys", "revoke", "not-a-key-id", "--user", "alice")
    assert nonsense.returncode == 1 and "No API key" in nonsense.stderr


def test_an_unknown_user_is_an_error_and_nothing_is_written(mnemo):
    mnemo.json("users", "create", "alice")
    before = mnemo.json("users", "list")
    for args in (
        ("keys", "create", "--user", "nobody"),
        ("keys", "list", "--user", "nobody"),
        ("keys", "revoke", "0123456789abcdef", "--user", "nobody"),
        ("keys", "create", "--user", "ALICE"),  # names are exact
    ):
        done = mnemo(*args)
        assert done.returncode == 1, args
        assert "No user named" in done.stderr and "mnemo_" not in done.stdout
    assert mnemo.json("users", "list") == before  # no user made on the way, no key added

    missing = mnemo("keys", "create")
    assert missing.returncode == 2 and "--user" in missing.stderr


@pytest.mark.backend("sqlite")
def test_no_database_yet_is_said_and_none_is_created(tmp_path):
    mnemo = Mnemo(tmp_path / "empty", None)
    for args in (("users", "list"), ("keys", "create", "--user", "alice")):
        done = mnemo(*args)
        assert done.returncode == 1 and "No mnemo database" in done.stderr
    assert not (tmp_path / "empty" / "mnemo.db").exists()


def test_the_global_user_is_honoured_or_refused_by_every_command(mnemo):
    """`mnemo --user NAME …`: the commands about one user act for that user; those that name a
    user themselves refuse another one; those for everyone refuse it rather than ignore it."""
    for name in ("alice", "bob"):
        mnemo.json("users", "create", name)
    made = mnemo.json("--user", "alice", "keys", "create", "--name", "laptop")
    assert made["id"] in [k["id"] for k in mnemo.json("--user", "alice", "keys", "list")]
    assert made["id"] not in [k["id"] for k in mnemo.json("keys", "list", "--user", "bob")]
    assert mnemo.json("--user", "alice", "keys", "revoke", made["id"])["revoked_at"]
    assert [m["name"] for m in mnemo.json("--user", "bob", "users", "list")] == ["bob"]
    assert [m["name"] for m in mnemo.json("--user", "bob", "users", "usage")] == ["bob"]
    assert mnemo.json("--user", "bob", "users", "budget", "bob", "500")["own_budget"] == 500
    for args, said in (
        (["--user", "alice", "keys", "list", "--user", "bob"], "not both"),
        (["keys", "list"], "--user NAME"),
        (["--user", "bob", "users", "budget", "alice", "100"], "not both"),
        (["--user", "bob", "users", "create", "carol"], "not both"),
        (["--user", "bob", "worker", "--once"], "--user does not apply"),
    ):
        refused = mnemo(*args)
        assert refused.returncode == 2 and said in refused.stderr, (args, refused.stderr)
    assert [m["name"] for m in mnemo.json("users", "list")] == ["alice", "bob"]  # carol was not made
    unknown = mnemo("--user", "carol", "users", "list")
    assert unknown.returncode == 1 and "carol" in unknown.stderr


def test_an_operator_renames_disables_and_enables_a_person(mnemo, tmp_path, embedder, database_url):
    alice = mnemo.json("users", "create", "alice")
    mnemo.json("users", "create", "bob")
    renamed = mnemo.json("users", "rename", "alice", "Alïce Ødegård")
    assert (renamed["id"], renamed["name"]) == (alice["user"]["id"], "Alïce Ødegård")
    assert who(tmp_path, embedder, database_url, alice["token"]) == "Alïce Ødegård"  # the key still works
    taken = mnemo("users", "rename", "Alïce Ødegård", "bob")
    assert taken.returncode == 1 and taken.stderr.startswith("name_taken: A user named 'bob' already exists")
    for args in (("users", "rename", "nobody", "x"), ("users", "disable", "nobody")):
        done = mnemo(*args)
        assert done.returncode == 1 and done.stderr.startswith("not_found: No user named"), args
    assert mnemo("users", "rename", "bob", " ").returncode != 0
    assert sorted(u["name"] for u in mnemo.json("users", "list")) == ["Alïce Ødegård", "bob"]

    off = mnemo.json("users", "disable", "Alïce Ødegård")
    assert off["disabled_at"]
    with pytest.raises(AccountDisabled):
        who(tmp_path, embedder, database_url, alice["token"])
    shown = mnemo("users", "list").stdout  # 80 columns: each person as labelled lines, ids whole
    assert re.search(rf"^id +{alice['user']['id']} *$", shown, re.M), shown
    assert re.search(r"^account +disabled *$", shown, re.M) and re.search(
        r"^account +enabled *$", shown, re.M
    )
    shown = mnemo("users", "enable", "Alïce Ødegård")
    assert shown.returncode == 0 and "keys work again" in shown.stdout
    assert who(tmp_path, embedder, database_url, alice["token"]) == "Alïce Ødegård"
    assert [u["disabled_at"] for u in mnemo.json("users", "list")] == [None, None]
