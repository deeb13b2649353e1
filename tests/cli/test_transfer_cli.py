"""`mnemo export` and `mnemo import` through the command line, on both backends.

The round trip starts from the default SQLite file and goes into this test's
backend: an export made on one store comes back whole on the other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import Invoke, add, as_json, invoker, ok

pytestmark = pytest.mark.slow  # the CLI over whole exports

CHATGPT = Path(__file__).parent.parent / "data" / "chatgpt" / "conversations.json"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def mnemo(data_dir: Path, database_url: str | None) -> Invoke:
    return invoker(data_dir, database_url)


@pytest.fixture
def source(tmp_path: Path) -> Invoke:
    """Another mnemo, on a SQLite file of its own: where the export comes from."""
    return invoker(tmp_path / "source", None)


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _without_time(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "exported_at"} for r in records]


def test_an_export_comes_back_whole_in_another_store(source: Invoke, mnemo: Invoke, tmp_path: Path) -> None:
    lisbon = add(source, "I live in Lisbon", "--category", "identity")
    ok(source("edit", lisbon["id"], "I live in Porto", "--reason", "moved"))
    kayak = add(source, "I own a red kayak")
    ok(source("forget", kayak["id"], "--reason", "sold it"))
    ok(source("agents", "create", "Chef", "--private"))
    ok(source("add", "I cook with cast iron", agent="Chef"))
    ok(source("remember", "-u", "Remember that I have a cat named Miso", "-a", "Noted."))
    add(source, "I collect stamps", user="bob")

    exported = tmp_path / "local.jsonl"
    summary = as_json(source("export", "--output", str(exported), "--json"))
    assert summary == {
        "file": str(exported),
        "agents": 1,
        "facts": 4,
        "events": 6,
        "conversations": 1,
        "messages": 2,
        "recalls": 0,
    }
    first = _records(exported.read_text())
    assert "stamps" not in exported.read_text()  # bob's, not local's

    report = as_json(mnemo("import", str(exported), "--json"))
    assert (report["format"], report["facts_added"], report["events_added"], report["audit_ok"]) == (
        "mnemo",
        4,
        6,
        True,
    )
    again = _records(ok(mnemo("export")).stdout)
    assert _without_time(again) == _without_time(first)
    assert as_json(mnemo("audit", "verify", "--json"))["ok"] is True
    hits = as_json(mnemo("search", "where do I live?", "--json"))
    assert hits[0]["fact"]["id"] == lisbon["id"] and hits[0]["fact"]["text"] == "I live in Porto"

    twice = as_json(mnemo("import", str(exported), "--json"))
    assert (twice["facts_added"], twice["facts_present"], twice["conversations_present"]) == (0, 4, 1)
    human = ok(mnemo("import", str(exported))).stdout
    assert "0 memories (4 already here)" in human

    # another user here with memories of their own: refused, clearly
    add(mnemo, "I am Carol", user="carol")
    refused = mnemo("import", str(exported), user="carol")
    assert refused.exit_code == 1 and "another id" in refused.stderr and "retry" not in refused.stderr


def test_conversations_import_once_and_a_dry_run_writes_nothing(mnemo: Invoke, tmp_path: Path) -> None:
    dry = as_json(mnemo("import", str(CHATGPT), "--dry-run", "--json"))
    assert (dry["format"], dry["dry_run"], dry["conversations_added"], dry["messages_added"]) == (
        "chatgpt",
        True,
        2,
        6,
    )
    assert mnemo("export").stderr.strip() == "not_found: No user named 'local'."  # not even the user was made

    ok(mnemo("agents", "create", "Travel"))
    first = as_json(mnemo("import", str(CHATGPT), "--agent", "Travel", "--json"))
    assert (first["conversations_added"], first["conversations_empty"], first["messages_added"]) == (2, 1, 6)
    second = as_json(mnemo("import", str(CHATGPT), "--agent", "Travel", "--json"))
    assert (second["conversations_added"], second["conversations_present"]) == (0, 2)

    chats = tmp_path / "chats.jsonl"
    chats.write_text(
        json.dumps({"id": "c1", "messages": [{"role": "user", "content": "I teach piano."}]})
        + "\n"
        + json.dumps(
            [{"role": "user", "content": "I run on Sundays."}, {"role": "assistant", "content": "Nice."}]
        )
        + "\n"
    )
    assert as_json(mnemo("import", str(chats), "--json"))["messages_added"] == 3
    human = ok(mnemo("import", str(chats))).stdout
    assert "0 conversations with 0 messages (2 already here)" in human

    conversations = [r for r in _records(ok(mnemo("export")).stdout) if r["type"] == "conversation"]
    said = [[(m["role"], m["content"]) for m in c["messages"]] for c in conversations]
    assert said[0][2] == ("user", "My sister Ana lives there, so I'll stay with her.")
    assert [("user", "I teach piano.")] in said and len(conversations) == 4
    travel = as_json(mnemo("agents", "list", "--json"))[0]["id"]
    assert [c["agent_id"] for c in conversations].count(travel) == 2


def test_facts_import_and_a_bad_line_is_named(mnemo: Invoke, tmp_path: Path) -> None:
    facts = tmp_path / "facts.jsonl"
    facts.write_text(
        '{"text": "I am allergic to peanuts", "category": "identity", "pinned": true}\n'
        "\n"
        '{"text": "I moved to Porto", "valid_from": "2025-06-01"}\n'
    )
    report = as_json(mnemo("import", str(facts), "--json"))
    assert (report["format"], report["facts_added"]) == ("facts", 2)
    assert as_json(mnemo("import", str(facts), "--json"))["facts_added"] == 0
    listed = as_json(mnemo("list", "--json"))
    assert {(f["text"], f["source"]["kind"], f["mentions"]) for f in listed} == {
        ("I am allergic to peanuts", "import", 1),
        ("I moved to Porto", "import", 1),
    }

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "I like figs"}\n{"text": "I like tea", "category": "drinks"}\n')
    result = mnemo("import", str(bad))
    assert result.exit_code == 2 and "Line 2: unknown category 'drinks'" in result.stderr
    assert "I like figs" not in ok(mnemo("list")).stdout  # nothing of the file was written

    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"hello": "world"}\n')
    result = mnemo("import", str(unknown))
    assert result.exit_code == 2 and "give --format" in result.stderr


DATA = Path(__file__).parent.parent / "data"


def test_other_tools_memories_and_conversations_import_once(mnemo: Invoke, tmp_path: Path) -> None:
    mem0 = as_json(mnemo("import", str(DATA / "mem0" / "memories.json"), "--json"))
    assert (mem0["format"], mem0["facts_added"], mem0["agents_added"], mem0["users"]) == (
        "mem0",
        4,
        1,
        ["alex", "sam"],
    )
    listed = as_json(mnemo("list", "--json", user="sam"))
    assert [(f["text"], f["source"]["origin"]["tool"], f["created_at"][:10]) for f in listed] == [
        ("Plays the cello in a community orchestra", "mem0", "2024-08-02")
    ]
    one = as_json(mnemo("import", str(DATA / "mem0" / "memories.json"), "--one-user", "--json", user="me"))
    assert (one["facts_added"], one["users"]) == (4, ["me"])

    khoj = as_json(mnemo("import", str(DATA / "khoj" / "memories.json"), "--json"))
    assert (khoj["format"], khoj["facts_added"]) == ("khoj", 3)
    markdown = DATA / "markdown" / "facts.md"
    assert as_json(mnemo("import", str(markdown), "--json"))["facts_added"] == 8
    human = ok(mnemo("import", str(markdown))).stdout
    assert "0 memories (8 already here)" in human
    texts = {f["text"]: f["source"]["origin"] for f in as_json(mnemo("list", "--json"))}
    assert texts["My cat is called Miso 🐈"] == {"tool": "khoj", "id": "15", "details": None}
    assert texts["I live in Lisbon"] == {"tool": "markdown", "id": "facts.md:3", "details": None}

    claude = ok(mnemo("import", str(DATA / "claude" / "conversations.json"))).stdout
    assert "2 conversations with 5 messages" in claude and "mnemo backfill" in claude
    again = as_json(
        mnemo("import", str(DATA / "claude" / "conversations.json"), "--format", "claude", "--json")
    )
    assert (again["conversations_added"], again["conversations_present"]) == (0, 2)

    bad = tmp_path / "mem0.json"
    bad.write_text(json.dumps([{"id": "a", "memory": "I like figs"}, {"id": "b", "memory": ""}]))
    result = mnemo("import", str(bad), user="fig")
    assert result.exit_code == 2 and "Record 2 (id 'b'): a memory needs some text" in result.stderr
    assert mnemo("list", user="fig").stderr.strip() == "not_found: No user named 'fig'."
    unknown = tmp_path / "notes.dat"
    unknown.write_text("I like figs\n")
    result = mnemo("import", str(unknown))
    assert result.exit_code == 2 and "give --format markdown" in result.stderr
    forced = as_json(mnemo("import", str(unknown), "--format", "markdown", "--json", user="fig"))
    assert (forced["format"], forced["facts_added"]) == ("markdown", 1)


def test_an_export_keeps_each_memorys_end(source: Invoke, mnemo: Invoke, tmp_path: Path) -> None:
    ended = add(source, "I am in Lisbon this week", "--until", "2020-01-05")
    later = add(source, "My sister stays with us", "--until", "2999-12-25")
    moved = add(source, "I am off coffee")
    ok(source("end", moved["id"], "2998-04-01"))
    exported = tmp_path / "local.jsonl"
    ok(source("export", "--output", str(exported)))
    assert as_json(mnemo("import", str(exported), "--json"))["audit_ok"] is True
    kept = {f["id"]: f["valid_to"][:10] for f in as_json(mnemo("list", "--json"))}
    assert kept == {ended["id"]: "2020-01-05", later["id"]: "2999-12-25", moved["id"]: "2998-04-01"}
    assert "ended 2020-01-05" in ok(mnemo("list")).stdout
    assert ended["id"] not in [h["fact"]["id"] for h in as_json(mnemo("search", "Lisbon", "--json"))]
    assert _without_time(_records(ok(mnemo("export")).stdout)) == _without_time(
        _records(exported.read_text())
    )
