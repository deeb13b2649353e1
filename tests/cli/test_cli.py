"""The `mnemo` command line, in-process through Typer's runner and once as the installed script."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mnemo.cli.main import app
from tests.helpers import in_store

pytestmark = pytest.mark.slow  # the whole CLI, ~1 s a test

Invoke = Callable[..., Result]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def invoker(data_dir: Path, database_url: str | None) -> Invoke:
    """mnemo(*args, user=None, agent=None): one in-process run against a tmp data dir, and
    `database_url` when it is set."""
    runner = CliRunner()
    env = {"COLUMNS": "200", **({"MNEMO_DATABASE_URL": database_url} if database_url else {})}

    def invoke(*args: str, user: str | None = None, agent: str | None = None) -> Result:
        head = ["--data-dir", str(data_dir)]
        if user:
            head += ["--user", user]
        if agent:
            head += ["--agent", agent]
        return runner.invoke(app, [*head, *args], env=env, catch_exceptions=False)

    return invoke


@pytest.fixture
def mnemo(data_dir: Path, database_url: str | None) -> Invoke:
    """The CLI on this test's backend (every test using it runs on SQLite and on PostgreSQL)."""
    return invoker(data_dir, database_url)


@pytest.fixture
def mnemo_sqlite(data_dir: Path) -> Invoke:
    """The CLI on its default, the SQLite file in the data dir."""
    return invoker(data_dir, None)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def as_json(result: Result):
    return json.loads(ok(result).stdout)


def add(mnemo: Invoke, text: str, *extra: str, user: str | None = None) -> dict:
    return as_json(mnemo("add", text, *extra, "--json", user=user))


# -- the everyday path --------------------------------------------------------------


def test_version_is_printed_without_opening_a_store(mnemo_sqlite: Invoke, data_dir: Path) -> None:
    from mnemo import __version__

    shown = ok(mnemo_sqlite("--version"))
    assert shown.stdout == f"mnemo {__version__}\n" and not data_dir.exists()


def test_added_text_comes_back_from_search_list_and_show(mnemo: Invoke) -> None:
    human = ok(mnemo("add", "My sister Ana lives in Porto"))
    assert "My sister Ana lives in Porto" in human.stdout
    tea = add(mnemo, "I drink green tea every morning", "--category", "preference")
    assert tea["text"] == "I drink green tea every morning"
    assert tea["category"] == "preference" and tea["status"] == "active"

    hits = as_json(mnemo("search", "what tea do I drink", "--json"))
    assert hits[0]["fact"]["id"] == tea["id"]
    assert hits[0]["rank"] == 1 and "semantic" in hits[0]["why"]

    table = ok(mnemo("search", "green tea"))
    assert "I drink green tea every morning" in table.stdout and tea["id"] in table.stdout

    listed = as_json(mnemo("list", "--json"))
    assert {f["text"] for f in listed} == {"I drink green tea every morning", "My sister Ana lives in Porto"}
    assert "My sister Ana lives in Porto" in ok(mnemo("list")).stdout

    assert as_json(mnemo("show", tea["id"], "--json"))["text"] == "I drink green tea every morning"
    assert "I drink green tea every morning" in ok(mnemo("show", tea["id"])).stdout


def test_an_end_is_set_with_add_shown_when_past_and_cleared_with_end(mnemo: Invoke) -> None:
    trip = add(mnemo, "I am in Lisbon this week", "--until", "2020-01-05")
    assert trip["valid_to"].startswith("2020-01-05")
    assert "ended 2020-01-05" in ok(mnemo("list")).stdout
    assert "its end passed" in ok(mnemo("history", trip["id"])).stdout  # read as the event it is
    assert as_json(mnemo("show", trip["id"], "--json"))["ended"] is True
    assert as_json(mnemo("search", "Lisbon", "--json")) == []  # past its end: not recalled as true now
    cleared = as_json(mnemo("end", trip["id"], "--json"))
    assert cleared["valid_to"] is None and cleared["version"] == 2
    assert "ended" not in ok(mnemo("list")).stdout
    assert "its end passed" not in ok(mnemo("history", trip["id"])).stdout
    assert as_json(mnemo("search", "Lisbon", "--json"))[0]["fact"]["id"] == trip["id"]
    assert "Ends 2999-01-01" in ok(mnemo("end", trip["id"], "2999-01-01")).stdout


def test_an_id_may_be_given_by_a_start_of_it_that_is_unique(mnemo: Invoke) -> None:
    tea = add(mnemo, "I drink green tea every morning")
    oslo = add(mnemo, "I live in Oslo")
    # ids made the same minute share their first characters: a start of both is refused
    shared = next(i for i in range(36) if tea["id"][i] != oslo["id"][i])
    assert shared >= 8
    both = mnemo("show", tea["id"][:8])
    assert both.exit_code != 0 and "starts several memory ids" in both.stderr
    own = tea["id"][: shared + 1]
    assert as_json(mnemo("show", own, "--json"))["id"] == tea["id"]
    assert as_json(mnemo("forget", own.upper(), "--json"))["status"] == "retracted"
    assert as_json(mnemo("restore", own, "--json"))["status"] == "active"
    assert "No memory with id" in mnemo("show", "ffffffff-ff").stderr
    assert "No memory with id" in mnemo("show", "0123%").stderr


def test_the_audit_log_is_listed_newest_first(mnemo: Invoke) -> None:
    tea = add(mnemo, "I drink green tea every morning")
    ok(mnemo("settings", "recalls", "on", user="bob"))  # bob is there, with nothing done
    assert "The audit log is empty." in ok(mnemo("audit", "list", user="bob")).stdout
    ok(mnemo("forget", tea["id"], "--reason", "switched to coffee"))
    listed = as_json(mnemo("audit", "list", "--json"))
    assert [(e["action"], e["fact_id"]) for e in listed] == [("retract", tea["id"]), ("create", tea["id"])]
    assert listed[0]["reason"] == "switched to coffee"
    human = ok(mnemo("audit", "list", "--limit", "1")).stdout
    assert "retract" in human and "switched to coffee" in human and "create" not in human


def test_restating_a_memory_reinforces_it(mnemo: Invoke) -> None:
    first = add(mnemo, "I like aisle seats")
    again = ok(mnemo("add", "i like aisle seats."))
    assert "Already remembered (mentioned 2 times)" in again.stdout and first["id"] in again.stdout
    assert len(as_json(mnemo("list", "--json"))) == 1


def test_edit_keeps_the_id_and_history_shows_old_and_new_text(mnemo: Invoke) -> None:
    fact = add(mnemo, "I work at Acme")
    edited = as_json(mnemo("edit", fact["id"], "I work at Globex", "--reason", "new job", "--json"))
    assert edited["id"] == fact["id"] and edited["text"] == "I work at Globex" and edited["version"] == 2

    events = as_json(mnemo("history", fact["id"], "--json"))
    assert [e["action"] for e in events] == ["create", "edit"]
    assert events[1]["before"]["text"] == "I work at Acme"
    assert events[1]["after"]["text"] == "I work at Globex"
    assert events[1]["reason"] == "new job" and events[1]["actor"] == "user"
    assert all({"seq", "at", "action", "actor", "reason", "before", "after"} <= set(e) for e in events)

    timeline = ok(mnemo("history", fact["id"])).stdout
    assert "I work at Acme → I work at Globex" in timeline and "new job" in timeline

    # as it was believed when it was created
    past = as_json(mnemo("list", "--as-of", fact["created_at"], "--json"))
    assert [f["text"] for f in past] == ["I work at Acme"]


def test_edit_of_a_stale_version_is_a_conflict(mnemo: Invoke) -> None:
    fact = add(mnemo, "I have two cats")
    ok(mnemo("edit", fact["id"], "I have three cats", "--version", "1"))
    stale = mnemo("edit", fact["id"], "I have four cats", "--version", "1")
    assert stale.exit_code == 1
    assert stale.stderr.startswith("version_conflict: ") and "at version 2, not 1" in stale.stderr
    assert as_json(mnemo("show", fact["id"], "--json"))["text"] == "I have three cats"


def test_forget_hides_from_search_but_list_retracted_shows_it(mnemo: Invoke) -> None:
    fact = add(mnemo, "I am allergic to peanuts")
    assert fact["id"] in {h["fact"]["id"] for h in as_json(mnemo("search", "peanuts", "--json"))}

    forgotten = as_json(mnemo("forget", fact["id"], "--reason", "outgrew it", "--json"))
    assert forgotten["status"] == "retracted"
    assert as_json(mnemo("search", "peanuts", "--json")) == []
    assert "I am allergic to peanuts" not in ok(mnemo("search", "peanuts")).stdout
    assert as_json(mnemo("list", "--json")) == []
    retracted = ok(mnemo("list", "--status", "retracted"))
    assert "I am allergic to peanuts" in retracted.stdout
    assert [f["id"] for f in as_json(mnemo("list", "--status", "all", "--json"))] == [fact["id"]]

    ok(mnemo("restore", fact["id"]))
    assert fact["id"] in {h["fact"]["id"] for h in as_json(mnemo("search", "peanuts", "--json"))}


def test_purge_refuses_without_yes_and_erases_with_it(mnemo: Invoke, data_dir: Path) -> None:
    fact = add(mnemo, "My bank PIN is 432187")
    refused = mnemo("purge", fact["id"])
    assert refused.exit_code == 1
    assert "--yes" in refused.stderr and "My bank PIN is 432187" in refused.stderr
    assert as_json(mnemo("show", fact["id"], "--json"))["text"] == "My bank PIN is 432187"

    purged = as_json(mnemo("purge", fact["id"], "--yes", "--json"))
    assert purged["purged"] is True and purged["text"] == ""
    history = ok(mnemo("history", fact["id"], "--json")).stdout
    assert "432187" not in history and json.loads(history)[-1]["action"] == "purge"
    assert "432187" not in ok(mnemo("list", "--status", "all")).stdout
    assert ok(mnemo("audit", "verify")).stdout.strip().startswith("ok")


def test_purge_shows_each_message_it_would_erase_and_offers_what_stays(
    mnemo: Invoke, data_dir: Path, embedder, database_url
) -> None:
    """Without --yes, a purge lists each message it takes (id, conversation, time, role, length,
    why, text), the long message that says it in passing by an excerpt (offered: --message),
    and the same text in another agent (--other-agents); --keep-message leaves one out."""
    from mnemo.domain import Message, Scope

    letter = (
        "Here is my cover letter. " + "I led the billing migration. " * 100 + "I hate coriander, by the way."
    )
    ids = {}

    async def seed(memory):
        scope = Scope((await memory.accounts.user("ana")).id)
        for conversation, text in (("short", "I hate coriander!"), ("letter", letter)):
            await memory.store.save_messages(scope, conversation, [Message("user", text)], memory.clock())
            ids[conversation] = (await memory.messages(scope.user_id, conversation))[0].id

    in_store(data_dir, embedder, seed, database_url)
    ok(mnemo("agents", "create", "chef", "--private", user="ana"))
    fact = add(mnemo, "I hate coriander", user="ana")
    copy = as_json(mnemo("add", "I hate coriander", "--json", user="ana", agent="chef"))

    shown = mnemo("purge", fact["id"], user="ana")
    assert shown.exit_code == 1
    said = shown.stderr
    assert re.search(
        rf"{ids['short']}\s+conversation 'short', \d{{4}}-\d\d-\d\d \d\d:\d\d, user,"
        r" 17 characters \(says it\)",
        said,
    )
    assert '"I hate coriander!"' in said
    assert f"{ids['letter']}  conversation 'letter'" in said and f"{len(letter):,} characters" in said
    assert '"…I led the billing migration. I led' in said and 'I hate coriander, by the way."' in said
    assert "I led the billing migration. " * 10 not in said  # an excerpt, not the letter
    assert f"{copy['id']}  chef: I hate coriander" in said and "--other-agents" in said

    purged = as_json(
        mnemo("purge", fact["id"], "--yes", "--json", "--keep-message", ids["short"], user="ana")
    )
    receipt = as_json(mnemo("receipts", "show", purged["receipt_id"][:-6], user="ana"))  # a start will do
    assert receipt["body"]["erased"]["messages"] == [] and receipt["body"]["erased"]["facts"] == [fact["id"]]
    assert as_json(mnemo("show", copy["id"], "--json", user="ana"))["text"] == "I hate coriander"

    again = add(mnemo, "I hate coriander", user="ana")
    args = ("purge", again["id"], "--yes", "--json", "--message", ids["letter"], "--other-agents")
    receipt = as_json(mnemo("receipts", "show", as_json(mnemo(*args, user="ana"))["receipt_id"], user="ana"))
    assert sorted(receipt["body"]["erased"]["messages"]) == sorted(ids.values())
    assert sorted(receipt["body"]["erased"]["facts"]) == sorted([again["id"], copy["id"]])


def test_a_purge_prints_its_receipt_which_checks_out_until_it_is_changed(
    mnemo: Invoke, tmp_path: Path
) -> None:
    fact = add(mnemo, "My bank PIN is 432187")
    purged = as_json(mnemo("purge", fact["id"], "--yes", "--json"))
    listed = as_json(mnemo("receipts", "list", "--json"))
    assert [r["id"] for r in listed] == [purged["receipt_id"]] and listed[0]["kind"] == "memory"
    file = tmp_path / "receipt.json"
    ok(mnemo("receipts", "show", purged["receipt_id"], "--out", str(file)))
    assert "432187" not in file.read_text() and fact["id"] in file.read_text()
    assert ok(mnemo("audit", "verify-receipt", str(file))).stdout.startswith("ok")
    add(mnemo, "I like jazz", user="bob")  # the global --user: a receipt of that person's, or not valid
    of_bob = mnemo("audit", "verify-receipt", str(file), user="bob")
    assert of_bob.exit_code == 1 and "another user's erasure" in of_bob.stderr

    changed = json.loads(file.read_text())
    changed["body"]["erased"]["facts"] = []
    file.write_text(json.dumps(changed))
    refused = mnemo("audit", "verify-receipt", str(file))
    assert refused.exit_code == 1 and "signature does not match" in refused.stderr
    file.write_text("{not json")
    not_json = mnemo("audit", "verify-receipt", str(file))
    assert not_json.exit_code == 2 and not_json.stderr.startswith("invalid_input: ")
    # the true receipt with its body named twice: which one counts is up to the reader, so neither
    ok(mnemo("receipts", "show", purged["receipt_id"], "--out", str(file)))
    true = json.loads(file.read_text())
    body = json.dumps(true["body"])
    file.write_text(f'{{"body": {body}, "body": {body}, "signature": "{true["signature"]}"}}')
    refused = mnemo("audit", "verify-receipt", str(file))
    assert refused.exit_code == 2 and refused.stderr.startswith("invalid_input: Not a valid receipt")
    assert "twice" in refused.stderr


def test_erasing_a_conversation_that_is_not_there_is_refused(mnemo: Invoke) -> None:
    add(mnemo, "I like jazz")
    for args in (["nope"], ["nope", "--yes"]):
        missing = mnemo("erase", "conversation", *args)
        assert missing.exit_code == 1 and missing.stderr.strip() == "not_found: No conversation 'nope'."


def test_erase_about_numbers_the_matches_and_erases_the_picked_ones(mnemo: Invoke) -> None:
    sister = add(mnemo, "My sister lives in Berlin")
    add(mnemo, "I was in Berlin in 2019")
    add(mnemo, "I live in Lisbon")
    listed = as_json(mnemo("erase", "about", "berlin", "--json"))
    assert sorted(m["text"] for m in listed) == ["I was in Berlin in 2019", "My sister lives in Berlin"]
    number = next(m["number"] for m in listed if m["id"] == sister["id"])
    refused = mnemo("erase", "about", "berlin", "--pick", str(number))
    assert refused.exit_code == 1 and "--yes" in refused.stderr
    for bad in ("0", "9", "one"):
        picked = mnemo("erase", "about", "berlin", "--pick", bad, "--yes")
        assert picked.exit_code == 2 and picked.stderr.startswith("invalid_input: --pick takes numbers")
    assert len(as_json(mnemo("list", "--json"))) == 3  # nothing went yet
    ok(mnemo("erase", "about", "berlin", "--pick", str(number), "--yes"))
    assert sorted(f["text"] for f in as_json(mnemo("list", "--json"))) == [
        "I live in Lisbon",
        "I was in Berlin in 2019",
    ]


def test_erase_everything_asks_first_then_leaves_nothing(mnemo: Invoke) -> None:
    add(mnemo, "My bank PIN is 432187")
    add(mnemo, "I live in Lisbon")
    refused = mnemo("erase", "everything")
    assert refused.exit_code == 1 and "2 memories" in refused.stderr and "--yes" in refused.stderr
    assert len(as_json(mnemo("list", "--json"))) == 2
    receipt = as_json(mnemo("erase", "everything", "--yes", "--json"))
    assert receipt["body"]["kind"] == "everything" and receipt["body"]["erased"]["counts"]["facts"] == 2
    assert as_json(mnemo("list", "--json")) == []
    assert "432187" not in ok(mnemo("history", receipt["body"]["erased"]["facts"][0], "--json")).stdout
    assert ok(mnemo("audit", "verify")).stdout.strip().startswith("ok")


def test_pin_and_unpin(mnemo: Invoke) -> None:
    fact = add(mnemo, "Always answer in Portuguese")
    add(mnemo, "I own a red bicycle")
    assert as_json(mnemo("pin", fact["id"], "--json"))["pinned"] is True
    hits = as_json(mnemo("search", "bicycle", "--json"))
    assert hits[0]["fact"]["id"] == fact["id"] and "pinned" in hits[0]["why"]
    assert "pinned" in ok(mnemo("search", "bicycle")).stdout
    assert as_json(mnemo("unpin", fact["id"], "--json"))["pinned"] is False


def test_add_pinned_with_a_valid_from_date(mnemo: Invoke) -> None:
    fact = add(mnemo, "I live in Lisbon", "--pin", "--valid-from", "2024-05-01")
    assert fact["pinned"] is True
    assert fact["valid_from"] == "2024-05-01T00:00:00+00:00"  # naive dates are UTC


# -- errors ---------------------------------------------------------------------------


def test_unknown_id_says_so_with_exit_1(mnemo: Invoke) -> None:
    add(mnemo, "something to create the database")
    for args in (
        ["show", "no-such-id"],
        ["history", "no-such-id"],
        ["edit", "no-such-id", "new text"],
        ["forget", "no-such-id"],
        ["restore", "no-such-id"],
        ["pin", "no-such-id"],
        ["purge", "no-such-id", "--yes"],
        ["approve", "no-such-id"],
    ):
        result = mnemo(*args)
        assert result.exit_code == 1, args
        assert result.stderr.strip() == "not_found: No memory with id no-such-id.", args
        assert "Traceback" not in result.output


def test_empty_text_is_refused_with_exit_2(mnemo: Invoke) -> None:
    empty = mnemo("add", "   ")
    assert empty.exit_code == 2 and "needs some text" in empty.stderr
    assert empty.stderr.startswith("invalid_input: ")
    fact = add(mnemo, "I like jazz")
    blank_edit = mnemo("edit", fact["id"], "")
    assert blank_edit.exit_code == 2 and "needs some text" in blank_edit.stderr
    assert as_json(mnemo("show", fact["id"], "--json"))["text"] == "I like jazz"


def test_bad_datetimes_are_usage_errors(mnemo: Invoke) -> None:
    add(mnemo, "I like jazz")
    bad = mnemo("list", "--as-of", "last tuesday")
    assert bad.exit_code == 2 and "not an ISO date" in bad.output  # a usage message of the command line
    assert mnemo("add", "x y z", "--valid-from", "2024-13-45").exit_code == 2
    assert as_json(mnemo("list", "--as-of", "2000-01-01", "--json")) == []
    assert as_json(mnemo("search", "jazz", "--as-of", "2000-01-01T10:00:00+02:00", "--json")) == []


def test_read_only_commands_do_not_create_the_database(mnemo_sqlite: Invoke, data_dir: Path) -> None:
    mnemo = mnemo_sqlite
    for args in (
        ["list"],
        ["search", "anything"],
        ["show", "some-id"],
        ["history", "some-id"],
        ["audit", "verify"],
        ["review"],
    ):
        result = mnemo(*args)
        assert result.exit_code == 1, args
        assert f"No mnemo database at {data_dir / 'mnemo.db'} yet" in result.stderr, args
        assert "mnemo add" in result.stderr
    assert not data_dir.exists()

    ok(mnemo("add", "now there is one"))
    assert (data_dir / "mnemo.db").is_file()


def test_read_only_commands_create_no_user(
    mnemo: Invoke, data_dir: Path, tmp_path: Path, database_url: str | None, embedder
) -> None:
    source = invoker(tmp_path / "source", None)
    add(source, "I keep bees", user="bob")
    exported = tmp_path / "bob.jsonl"
    ok(source("export", "--output", str(exported), user="bob"))

    theirs = add(mnemo, "The database is there", user="alice")["id"]
    reading = (
        ["list"],
        ["search", "bees"],
        ["show", theirs],
        ["history", theirs],
        ["review"],
        ["audit", "verify"],
        ["settings", "show"],
        ["agents", "list"],
        ["export"],
        ["export", "--output", str(tmp_path / "nothing.jsonl")],
        ["purge", theirs],  # without --yes it only says what it would erase
    )
    # a change to one memory needs someone who has memories
    changing = (["edit", theirs, "new text"], ["forget", theirs], ["pin", theirs], ["approve", theirs])
    for args in (*reading, *changing):
        result = mnemo(*args, user="bob")
        assert result.exit_code == 1, args
        assert result.stderr.strip() == "not_found: No user named 'bob'.", args
    assert not (tmp_path / "nothing.jsonl").exists()
    assert in_store(data_dir, embedder, lambda m: m.accounts.find_user("bob"), database_url) is None

    report = as_json(mnemo("import", str(exported), "--json", user="bob"))
    assert (report["user_created"], report["facts_added"], report["audit_ok"]) == (True, 1, True)
    assert [f["text"] for f in as_json(mnemo("list", "--json", user="bob"))] == ["I keep bees"]


def test_missing_config_file_is_a_usage_error(mnemo: Invoke, tmp_path: Path) -> None:
    result = mnemo("--config", str(tmp_path / "nope.toml"), "list")
    assert result.exit_code == 2 and result.stderr.startswith("invalid_input: Config file not found")


# -- people, agents, switches -------------------------------------------------------


def test_a_user_never_sees_another_users_memories(mnemo: Invoke) -> None:
    secret = add(mnemo, "Alice's passport number is X1234567", user="alice")
    add(mnemo, "Bob plays the cello", user="bob")

    for args in (["search", "passport number"], ["list"], ["list", "--status", "all"], ["review"]):
        for fmt in ([], ["--json"]):
            out = ok(mnemo(*args, *fmt, user="bob")).stdout
            assert "X1234567" not in out, args
    assert "Bob plays the cello" in ok(mnemo("list", user="bob")).stdout
    shown = mnemo("show", secret["id"], user="bob")
    assert shown.exit_code == 1 and "No memory with id" in shown.stderr
    assert mnemo("forget", secret["id"], user="bob").exit_code == 1

    assert "X1234567" in ok(mnemo("search", "passport number", user="alice")).stdout
    nobody = mnemo("list")  # the default user, "local", who was never created
    assert nobody.exit_code == 1 and "X1234567" not in nobody.output


def test_agents(mnemo: Invoke) -> None:
    created = as_json(mnemo("agents", "create", "work", "--private", "--json"))
    assert created["name"] == "work" and created["private"] is True
    taken = mnemo("agents", "create", "work")  # a conflict with what is there, as a stale version
    assert taken.exit_code == 1 and taken.stderr.startswith("name_taken: ")
    assert [a["name"] for a in as_json(mnemo("agents", "list", "--json"))] == ["work"]
    unknown = mnemo("list", agent="home")
    assert unknown.exit_code == 1 and "No agent named 'home'" in unknown.stderr

    private = as_json(mnemo("add", "The quarterly report is due Friday", "--json", agent="work"))
    assert private["agent_id"] == created["id"]
    assert as_json(mnemo("search", "quarterly report", "--json")) == []  # the default assistant
    as_work = as_json(mnemo("search", "quarterly report", "--json", agent="work"))
    assert as_work[0]["fact"]["id"] == private["id"]
    assert "work" in ok(mnemo("list")).stdout  # the person's own view shows every agent


def test_settings_switch_memory_off_and_on(mnemo: Invoke) -> None:
    add(mnemo, "I like jazz")
    shown = as_json(mnemo("settings", "show", "--json"))
    assert shown["memory_enabled"] is True and shown["user"] == "local"

    off = as_json(mnemo("settings", "memory", "off", "--json"))
    assert off["memory_enabled"] is False and off["user_switch"] == "off"
    assert as_json(mnemo("search", "jazz", "--json")) == []
    assert "Memory is off" in ok(mnemo("search", "jazz")).stdout

    ok(mnemo("settings", "memory", "default"))
    disabled = as_json(mnemo("settings", "server-mode", "disabled", "--json"))
    assert disabled["server_mode"] == "disabled" and disabled["memory_enabled"] is False
    assert as_json(mnemo("settings", "server-mode", "none", "--json"))["memory_enabled"] is True
    assert as_json(mnemo("settings", "policy", "guarded", "--json"))["review_policy"] == "guarded"
    assert mnemo("settings", "policy", "sometimes").exit_code == 2


def test_settings_switch_the_recall_log_off_and_on(mnemo: Invoke) -> None:
    add(mnemo, "I like jazz")
    shown = as_json(mnemo("settings", "show", "--json"))
    assert shown["record_recalls"] is True and shown["recall_log_days"] == 30
    off = as_json(mnemo("settings", "recalls", "off", "--json"))
    assert off["record_recalls"] is False and off["memory_enabled"] is True  # memory itself stays on
    assert re.search(r"recall log +off \(kept 30 days\)", ok(mnemo("settings", "show")).stdout)
    assert as_json(mnemo("settings", "recalls", "on", "--json"))["record_recalls"] is True
    assert mnemo("settings", "recalls", "sometimes").exit_code == 2


def test_remember_without_a_chat_model_learns_explicit_requests(mnemo: Invoke) -> None:
    learnt = ok(
        mnemo(
            "remember",
            "--user-message",
            "Please remember that my cat is called Tom.",
            "--assistant-message",
            "I will!",
        )
    )
    assert "only explicit requests" in learnt.stdout
    assert "My cat is called Tom" in learnt.stdout and "create" in learnt.stdout
    assert "My cat is called Tom" in ok(mnemo("search", "cat name")).stdout

    chat = as_json(mnemo("remember", "--user-message", "What a nice day.", "--json"))
    assert chat["events"] == [] and chat["explicit_only"] is True
    assert "Nothing learnt" in ok(mnemo("remember", "--user-message", "Hello there")).stdout


def test_review_approve_and_reject(mnemo: Invoke) -> None:
    ok(mnemo("settings", "policy", "review"))
    held = as_json(mnemo("remember", "-u", "Remember that I hate olives.", "--json"))
    (olives,) = held["held"]
    held = as_json(mnemo("remember", "-u", "Remember that I am vegan.", "--json"))
    (vegan,) = held["held"]

    waiting = ok(mnemo("review")).stdout
    assert "I hate olives" in waiting and "I am vegan" in waiting
    assert as_json(mnemo("search", "olives", "--json")) == []

    assert as_json(mnemo("approve", olives, "--json"))["status"] == "active"
    assert as_json(mnemo("reject", vegan, "--reason", "not true", "--json"))["status"] == "rejected"
    assert as_json(mnemo("review", "--json")) == []
    assert [f["text"] for f in as_json(mnemo("list", "--json"))] == ["I hate olives"]
    assert [f["text"] for f in as_json(mnemo("list", "--status", "rejected", "--json"))] == ["I am vegan"]
    twice = mnemo("approve", olives)
    assert twice.exit_code == 2 and "cannot approve" in twice.stderr.lower()


def test_audit_verify(mnemo: Invoke) -> None:
    fact = add(mnemo, "I run on Sundays")
    ok(mnemo("edit", fact["id"], "I run on Saturdays"))
    ok(mnemo("forget", fact["id"]))
    result = ok(mnemo("audit", "verify"))
    assert result.stdout.strip() == "ok, 3 events"
    assert as_json(mnemo("audit", "verify", "--json")) == {"ok": True, "events": 3, "problems": []}


# -- the installed console script -------------------------------------------------------


def test_console_script_end_to_end(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "mnemo"
    assert script.exists(), f"console script not installed at {script}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env["MNEMO_DATA_DIR"] = str(tmp_path / "via-env")

    def mnemo(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(script), *args], env=env, capture_output=True, text=True, timeout=120)

    missing = mnemo("list")
    assert missing.returncode == 1 and "No mnemo database" in missing.stderr
    assert "Traceback" not in missing.stderr

    added = mnemo("add", "I prefer window seats on long flights", "--json")
    assert added.returncode == 0, added.stderr
    fact = json.loads(added.stdout)
    assert (tmp_path / "via-env" / "mnemo.db").is_file()

    found = mnemo("search", "where do I like to sit on a plane", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["fact"]["id"] == fact["id"]
    assert hits[0]["fact"]["text"] == "I prefer window seats on long flights"

    unknown = mnemo("show", "nope")
    assert unknown.returncode == 1 and unknown.stderr.strip() == "not_found: No memory with id nope."
