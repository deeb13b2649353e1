"""`mnemo settings gate` and `mnemo import` through the sensitive-data gate, on both backends:
the database files are read byte by byte for what was blocked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import Invoke, as_json, invoker, ok
from tests.sensitive_cases import SAID, needles, postgres_bytes, sqlite_bytes, start_clean

pytestmark = pytest.mark.slow  # the CLI, in-process, over imports


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def mnemo(data_dir: Path, database_url: str | None) -> Invoke:
    if database_url:
        start_clean(database_url)
    return invoker(data_dir, database_url)


def test_the_gate_is_set_from_the_command_line(mnemo: Invoke) -> None:
    shown = as_json(mnemo("settings", "gate", "phone=allow", "--json"))
    assert shown["sensitive_gate"]["card"] == "redact"
    changed = as_json(mnemo("settings", "gate", "card=allow", "email=redact", "--json"))
    assert (changed["sensitive_gate"]["card"], changed["sensitive_gate"]["email"]) == ("allow", "redact")
    for bad, named in (("cards=allow", "'cards'"), ("card=shred", "'shred'"), ("card", "'card'")):
        refused = mnemo("settings", "gate", "phone=redact", bad)
        assert refused.exit_code == 2 and named in refused.stderr, refused.stderr
        assert as_json(mnemo("settings", "show", "--json"))["sensitive_gate"] == changed["sensitive_gate"]
    human = ok(mnemo("settings", "show")).stdout
    assert "card allow" in human and "credential block" in human


def test_an_imported_file_leaves_no_blocked_value_in_the_database(
    mnemo: Invoke, tmp_path: Path, data_dir: Path, database_url: str | None
) -> None:
    facts = tmp_path / "facts.jsonl"
    facts.write_text("".join(json.dumps({"text": text}) + "\n" for text, _, _ in SAID))
    report = as_json(mnemo("import", str(facts), "--json"))
    credentials = sum(1 for _, _, k in SAID if k == "credential")
    assert (report["facts_added"], report["blocked"]) == (len(SAID) - credentials, credentials)
    again = as_json(mnemo("import", str(facts), "--json"))
    assert again["facts_added"] == 0  # the same file again adds nothing
    chats = tmp_path / "chats.jsonl"
    chats.write_text(
        json.dumps({"id": "c1", "messages": [{"role": "user", "content": t} for t, _, _ in SAID]})
    )
    assert as_json(mnemo("import", str(chats), "--json"))["messages_added"] == len(SAID)
    listed = ok(mnemo("list")).stdout
    assert "[card ending 4242]" in listed and "[government id]" in listed

    raw = postgres_bytes(database_url) if database_url else sqlite_bytes(data_dir)
    assert b"[bank account ending 3000]" in raw
    for needle in needles():
        assert needle not in raw, needle
