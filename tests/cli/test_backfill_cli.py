"""`mnemo backfill` through the command line, on both backends: in-process, and as a process
that is killed (SIGKILL) or interrupted (Ctrl-C) mid-run and then resumed."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mnemo.cli.main import app
from mnemo.domain import Message, Scope, Status, utcnow
from tests.fakes.learner import Learner
from tests.helpers import in_store
from tests.server.processes import MNEMO, environment

pytestmark = pytest.mark.slow  # the CLI, and processes interrupted and killed

CONVERSATIONS = {  # user, conversation id, days ago, what the user says in each turn
    ("alice", "c1", 3): ["I play the cello", "My sister Ana lives in Porto"],
    ("alice", "c2", 2): ["I am allergic to peanuts"],
    ("alice", "c3", 10): ["I grew up in Lyon"],
    ("alice", "c4", 1.5): ["I keep bees in my garden", "I run a marathon every spring"],
    ("bob", "c5", 1): ["I drive a green tractor"],
}
CHATGPT = Path(__file__).parent.parent / "data" / "chatgpt" / "conversations.json"
RECENT = [t for (_, _, days), said in CONVERSATIONS.items() if days < 7 for t in said]


@pytest.fixture
def learner(scripted_llm) -> Learner:
    scripted_llm.responder = learner = Learner()
    return learner


@pytest.fixture
def data_dir(tmp_path: Path, embedder, database_url) -> Path:
    """A database holding CONVERSATIONS, said that many days before now."""
    data_dir = tmp_path / "data"

    async def seed(memory):
        now = utcnow()
        for (name, conversation, days), said in CONVERSATIONS.items():
            scope = Scope((await memory.accounts.user(name)).id)
            for i, text in enumerate(said):
                pair = [Message("user", text), Message("assistant", "Noted.")]
                at = now - timedelta(days=days) + timedelta(minutes=i)
                await memory.store.save_messages(scope, conversation, pair, at)

    in_store(data_dir, embedder, seed, database_url)
    return data_dir


@pytest.fixture
def mnemo(data_dir: Path, database_url: str | None, scripted_llm):
    runner = CliRunner()
    env = {
        "COLUMNS": "200",
        "MNEMO_LLM_BASE_URL": scripted_llm.base_url,
        "MNEMO_LLM_MODEL": "scripted-model",
        **({"MNEMO_DATABASE_URL": database_url} if database_url else {}),
    }

    def invoke(*args: str, model: bool = True, user: str | None = None) -> Result:
        head = ["--data-dir", str(data_dir), *(["--user", user] if user else [])]
        run_env = env if model else {k: v for k, v in env.items() if not k.startswith("MNEMO_LLM")}
        return runner.invoke(app, [*head, *args], env=run_env, catch_exceptions=False)

    return invoke


def ok_output(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def as_json(result: Result, code: int = 0):
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def facts_of(data_dir, embedder, database_url, name: str) -> list:
    async def work(memory):
        user = await memory.accounts.find_user(name)
        scope = Scope(user.id, all_agents=True)
        return await memory.list(scope, statuses=list(Status), limit=1000)

    return in_store(data_dir, embedder, work, database_url)


def test_without_a_model_it_refuses(mnemo, learner) -> None:
    refused = mnemo("backfill", model=False)
    assert refused.exit_code == 1 and "needs a chat model" in refused.stderr
    assert "MNEMO_LLM_BASE_URL" in refused.stderr and not learner.extracted


def test_dry_run_then_apply_then_nothing_left(mnemo, learner, data_dir, embedder, database_url) -> None:
    dry = as_json(mnemo("backfill", "--json"))
    assert dry["mode"] == "dry-run" and dry["complete"] and dry["stopped"] is None
    alice = next(u for u in dry["users"] if u["user"] == "alice")
    assert (alice["conversations"], alice["turns"], alice["create"]) == (3, 5, 5)
    assert alice["samples"] and set(alice["samples"]) <= set(RECENT)
    assert facts_of(data_dir, embedder, database_url, "alice") == []
    human = mnemo("backfill")
    assert human.exit_code == 0 and "dry run" in human.stdout and "--apply" in human.stdout

    applied = as_json(mnemo("backfill", "--apply", "--json"))
    assert applied["mode"] == "apply" and applied["totals"]["create"] == 6
    learnt = facts_of(data_dir, embedder, database_url, "alice")
    assert sorted(f.text for f in learnt) == sorted(t for t in RECENT if t != "I drive a green tractor")
    assert all(f.source.message_ids and f.source.conversation_id for f in learnt)

    asked = Counter(learner.extracted)
    again = as_json(mnemo("backfill", "--apply", "--json"))
    assert again["totals"]["turns"] == 0 and again["totals"]["done_before"] == 4
    assert learner.extracted == asked

    forced = as_json(mnemo("backfill", "--apply", "--force", "--users", "bob", "--json"))
    assert forced["totals"]["reinforce"] == 1 and [u["user"] for u in forced["users"]] == ["bob"]
    wider = as_json(mnemo("backfill", "--apply", "--lookback-days", "30", "--users", "alice", "--json"))
    assert wider["totals"]["turns"] == 1 and wider["users"][0]["samples"] == ["I grew up in Lyon"]


def test_the_global_user_chooses_whose_conversations_are_read(mnemo, learner) -> None:
    """`mnemo --user bob backfill` plans for bob alone, as every command reads --user."""
    planned = as_json(mnemo("backfill", "--json", user="bob"))
    assert [u["user"] for u in planned["users"]] == ["bob"]
    assert as_json(mnemo("backfill", "--users", "bob", "--json", user="bob"))["users"][0]["user"] == "bob"
    both = mnemo("backfill", "--users", "alice", user="bob")
    assert both.exit_code == 2 and "not both" in both.stderr
    assert not learner.extracted or set(learner.extracted) <= {"I drive a green tractor"}


def _widen(report: dict) -> list[str]:
    """The arguments of the command a report gives to widen its window (after `mnemo`)."""
    command = shlex.split(report["outside_window"]["widen"])
    assert command[0] == "mnemo"
    return command[1:]


def test_the_window_says_what_it_left_out_and_how_to_widen_it(mnemo, learner) -> None:
    """alice's c3 was said 10 days ago: the 7-day window leaves it out, and says so."""
    dry = as_json(mnemo("backfill", "--json", user="alice"))
    left = dry["outside_window"]
    assert (left["conversations"], left["user_messages"]) == (1, 1)
    assert left["oldest"][:10] == (utcnow() - timedelta(days=10)).date().isoformat()
    assert dry["users"][0]["outside_window"]["conversations"] == 1
    human = ok_output(mnemo("backfill", user="alice"))
    assert "1 conversation with 1 user message said before the window" in human
    assert f"To learn from them too:\n  {left['widen']}\n" in human

    wider = as_json(mnemo(*_widen(dry), "--json"))
    assert wider["outside_window"]["conversations"] == 0 and wider["outside_window"]["widen"] is None
    assert "I grew up in Lyon" in wider["users"][0]["samples"] and wider["totals"]["turns"] == 6
    as_json(mnemo(*_widen(dry), "--apply", "--json"))
    again = as_json(mnemo("backfill", "--json", user="alice"))  # learnt: no longer left out
    assert again["outside_window"] == {"conversations": 0, "user_messages": 0, "oldest": None, "widen": None}
    assert "said before the window" not in ok_output(mnemo("backfill", user="alice"))


def test_since_sets_the_windows_start(mnemo, learner) -> None:
    start = (utcnow() - timedelta(days=2, hours=12)).replace(microsecond=0)
    report = as_json(mnemo("backfill", "--since", start.isoformat(), "--users", "alice", "--json"))
    assert report["since"] == start.isoformat() and report["users"][0]["conversations"] == 2  # c2, c4
    assert report["outside_window"]["conversations"] == 2  # c1, c3


def test_an_imported_chatgpt_export_is_learnt_with_the_command_the_import_gives(mnemo, learner) -> None:
    """The ChatGPT export's conversations are from 2024: the default window finds none and says
    how to widen it; the import's closing line gives the command that learns them."""
    imported = ok_output(mnemo("import", str(CHATGPT), user="carol"))
    command = shlex.split(re.search(r"To learn from them:\n +(.+)\n", imported)[1])
    assert command[0] == "mnemo" and "--apply" in command and "--since" in command
    default = as_json(mnemo("backfill", "--json", user="carol"))
    assert default["totals"]["conversations"] == 0
    assert default["outside_window"]["conversations"] == 2
    assert _widen(default) == [a for a in command[1:] if a != "--apply"]
    learnt = as_json(mnemo(*command[1:], "--json"))
    assert learnt["mode"] == "apply" and [u["user"] for u in learnt["users"]] == ["carol"]
    assert learnt["totals"]["conversations"] == 2 and learnt["totals"]["turns"] == 3


def test_history_shows_actor_backfill(mnemo, learner, data_dir, embedder, database_url) -> None:
    as_json(mnemo("backfill", "--apply", "--users", "bob", "--json"))
    (fact,) = facts_of(data_dir, embedder, database_url, "bob")
    events = as_json(mnemo("history", fact.id, "--json", user="bob"))
    assert [(e["action"], e["actor"]) for e in events] == [("create", "backfill")]


def test_delete_takes_back_only_what_backfill_learnt(
    mnemo, learner, data_dir, embedder, database_url
) -> None:
    mine = as_json(mnemo("add", "I am left-handed", "--json", user="alice"))
    as_json(mnemo("backfill", "--apply", "--json"))
    dry = as_json(mnemo("backfill", "--delete", "--users", "alice", "--json"))
    assert dry["mode"] == "delete-dry-run" and dry["totals"]["retracted"] == 5
    assert all(f.status == Status.ACTIVE for f in facts_of(data_dir, embedder, database_url, "alice"))

    recent = as_json(mnemo("backfill", "--delete", "--apply", "--lookback-days", "2", "--json"))
    # messages said in the last 2 days: alice's c4 (1.5 days ago, 2 turns), bob's c5
    assert recent["totals"]["retracted"] == 3
    everything = as_json(mnemo("backfill", "--delete", "--apply", "--json"))
    assert everything["totals"]["retracted"] == 3
    by_text = {f.text: f.status for f in facts_of(data_dir, embedder, database_url, "alice")}
    assert by_text.pop("I am left-handed") == Status.ACTIVE and mine["status"] == "active"
    assert set(by_text.values()) == {Status.RETRACTED}
    assert mnemo("audit", "verify", user="alice").exit_code == 0


def test_option_mistakes_are_usage_errors(mnemo, learner) -> None:
    for args in (
        ["--resume", "--users", "alice"],
        ["--resume", "--force"],
        ["--delete", "--force"],
        ["--users", " , "],
        ["--lookback-days", "0"],
        ["--batch-size", "0"],
        ["--since", "2026-01-01", "--lookback-days", "3"],
        ["--resume", "--since", "2026-01-01"],
        ["--since", "last week"],
    ):
        result = mnemo("backfill", *args)
        assert result.exit_code == 2, (args, result.output)
    nothing = mnemo("backfill", "--resume", "--apply")
    assert nothing.exit_code == 1 and "no interrupted backfill" in nothing.stderr.lower()
    unknown = mnemo("backfill", "--users", "carol")
    assert unknown.exit_code == 1 and "carol" in unknown.stderr


def test_a_failing_model_stops_the_run_and_resume_finishes(
    mnemo, learner, data_dir, embedder, database_url
) -> None:
    learner.fail_on.add("I am allergic to peanuts")
    stopped = mnemo("backfill", "--apply", "--batch-size", "1")
    assert stopped.exit_code == 1 and "mnemo backfill --apply --resume" in stopped.stderr
    assert "conversation c2" in stopped.stderr
    learner.fail_on.clear()
    resumed = as_json(mnemo("backfill", "--apply", "--resume", "--json"))
    assert resumed["complete"] and resumed["totals"]["turns"] == 4  # c2, c4's two turns, bob's c5
    assert learner.extracted == Counter(RECENT)
    assert len(facts_of(data_dir, embedder, database_url, "alice")) == 5


# -- as a process of its own, stopped mid-run ------------------------------------------------


def _start(data_dir: Path, scripted_llm, database_url: str | None, *args: str) -> subprocess.Popen:
    env = environment(data_dir, scripted_llm, database_url)
    return subprocess.Popen(
        [MNEMO, "backfill", "--apply", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _exactly_once(learner, data_dir, embedder, database_url, twice: str | None = None) -> None:
    """Every recent turn was asked about once (`twice`: the one in hand when the process died),
    and learnt into exactly one fact."""
    expected = Counter(RECENT)
    if twice:
        expected[twice] += 1
    assert learner.extracted == expected
    for name in ("alice", "bob"):
        made = Counter(f.source.message_ids for f in facts_of(data_dir, embedder, database_url, name))
        assert set(made.values()) == {1}
    learnt = [f.text for n in ("alice", "bob") for f in facts_of(data_dir, embedder, database_url, n)]
    assert sorted(learnt) == sorted(RECENT)


def test_killed_mid_run_then_resume_learns_each_turn_once(
    learner, scripted_llm, data_dir, embedder, database_url
) -> None:
    in_hand = "I keep bees in my garden"  # c4's first turn: after c1 and c2
    learner.block_on.add(in_hand)
    process = _start(data_dir, scripted_llm, database_url)
    try:
        assert learner.blocked.wait(120), (
            process.stderr.read() if process.poll() is not None else "no request"
        )
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        learner.release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    before = facts_of(data_dir, embedder, database_url, "alice")
    assert in_hand not in {f.text for f in before} and len(before) == 3

    learner.block_on.clear()
    resumed = _start(data_dir, scripted_llm, database_url, "--resume", "--json")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert json.loads(out)["totals"]["turns"] == 3
    _exactly_once(learner, data_dir, embedder, database_url, twice=in_hand)


def test_ctrl_c_finishes_the_turn_in_hand_and_says_where(
    learner, scripted_llm, data_dir, embedder, database_url
) -> None:
    in_hand = "I keep bees in my garden"
    learner.block_on.add(in_hand)
    process = _start(data_dir, scripted_llm, database_url)
    try:
        assert learner.blocked.wait(120), "no request"
        process.send_signal(signal.SIGINT)
        learner.release.set()
        _, err = process.communicate(timeout=60)
    finally:
        learner.release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "Stopped at user alice, conversation c4: interrupted" in err and "--resume" in err
    assert in_hand in {f.text for f in facts_of(data_dir, embedder, database_url, "alice")}

    learner.block_on.clear()
    resumed = _start(data_dir, scripted_llm, database_url, "--resume", "--json")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    _exactly_once(learner, data_dir, embedder, database_url)
