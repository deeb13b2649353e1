"""docs/scaling.md's move from SQLite to PostgreSQL, run as documented with the installed CLI:
every person of a SQLite data directory arrives whole in a PostgreSQL database (on one server,
or on a Citus cluster)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.mcp.conftest import SCRIPT
from tests.recipes.snippets import DOCS, recipe
from tests.selection import ANY_POSTGRESQL

pytestmark = [pytest.mark.slow, ANY_POSTGRESQL]  # the CLI, many times

PEOPLE = ("local", "Zoë van Dijk")  # a space and a non-ASCII letter in a name survive the loop


def mnemo(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_person_moves_from_sqlite_to_postgresql(tmp_path: Path, database_url: str) -> None:
    language, text = recipe("sqlite-to-postgres", DOCS / "scaling.md")
    assert language == "bash"
    old, new = tmp_path / "old", database_url
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env["PATH"] = f"{SCRIPT.parent}:{env['PATH']}"
    sqlite = {**env, "MNEMO_DATA_DIR": str(old)}
    for person in PEOPLE:
        fact = json.loads(mnemo(sqlite, "--user", person, "add", f"{person} lives in Porto", "--json"))
        mnemo(sqlite, "--user", person, "edit", fact["id"], f"{person} lives in Lisbon")
        mnemo(
            sqlite, "--user", person, "remember", "-u", "Remember that I have a cat named Miso", "-a", "Ok."
        )
        mnemo(sqlite, "--user", person, "agents", "create", "Chef")
    mnemo(sqlite, "--user", "local", "--agent", "Chef", "add", "I cook with cast iron")

    lines = text.splitlines()
    assert lines[0].startswith("OLD=") and lines[1].startswith("NEW=")
    script = "\n".join([f"OLD={old}", f"NEW='{new}'", *lines[2:]])
    # a MNEMO_DATABASE_URL left in the shell: the recipe unsets it before reading OLD
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={**env, "MNEMO_DATABASE_URL": "sqlite:///elsewhere"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.endswith(": moved")] == [
        f"{person}: moved" for person in sorted(PEOPLE)
    ]
    assert (tmp_path / "mnemo-move").stat().st_mode & 0o777 == 0o700

    postgres = {**env, "MNEMO_DATABASE_URL": new}
    assert sorted(u["name"] for u in json.loads(mnemo(postgres, "users", "list", "--json"))) == sorted(PEOPLE)
    for person in PEOPLE:
        assert json.loads(mnemo(postgres, "--user", person, "audit", "verify", "--json"))["ok"] is True
        moved, kept = (
            json.loads(mnemo(where, "--user", person, "list", "--status", "all", "--json"))
            for where in (postgres, sqlite)
        )
        assert moved == kept and {f["text"] for f in moved} >= {f"{person} lives in Lisbon"}
    # the loop may run again: nothing is imported twice
    again = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0 and again.stdout.count(": moved") == len(PEOPLE), again.stderr
    recount = json.loads(mnemo(postgres, "--user", "local", "list", "--status", "all", "--json"))
    assert len(recount) == len(
        json.loads(mnemo(sqlite, "--user", "local", "list", "--status", "all", "--json"))
    )
