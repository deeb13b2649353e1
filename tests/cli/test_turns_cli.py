"""`mnemo turns list` and `mnemo turns show` over turns a store holds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mnemo.build import build_store
from mnemo.domain import Scope, Turn, new_id
from mnemo.memory import Memory
from mnemo.providers.chat import OpenAIChatModel
from mnemo.settings import Settings
from tests.cli.test_cli import invoker
from tests.helpers import extraction, in_store, worker_for

pytestmark = pytest.mark.slow  # a store seeded, then a dozen commands


def said(scope: Scope, text: str) -> Turn:
    return Turn.of(scope, ("user", text), ("assistant", "Noted."))


async def seed(memory):
    """The local person's turn learnt without a chat model (waiting), then one queued; Bob's."""
    me = Scope((await memory.accounts.user("local")).id)
    bob = Scope((await memory.accounts.user("bob")).id)
    waiting = await memory.submit(said(me, "Remember that I live in Lisbon"))
    await worker_for(memory).drain()
    queued = await memory.submit(said(me, "I have a cat named Miso."))
    theirs = await memory.submit(said(bob, "Remember that Bob's secret is sesame"))
    (home,) = (await memory.turn(me.user_id, waiting.id)).facts["created"]
    return waiting.id, queued.id, theirs.id, home


def test_turns_list_and_show(tmp_path: Path, embedder, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    waiting, queued, theirs, home = in_store(data_dir, embedder, seed, database_url)
    mnemo = invoker(data_dir, database_url)

    def answer(*args: str) -> str:
        done = mnemo(*args)
        assert done.exit_code == 0, done.output
        return done.stdout

    listed = json.loads(answer("turns", "list", "--json"))
    assert [(t["id"], t["state"]) for t in listed] == [(queued, "queued"), (waiting, "waiting_for_model")]
    assert listed[1]["facts"]["created"] == [home] and listed[1]["reason"] is None
    assert theirs not in answer("turns", "list") and "sesame" not in answer("turns", "list", "--json")
    only = json.loads(answer("turns", "list", "--state", "waiting_for_model", "--json"))
    assert [t["id"] for t in only] == [waiting]
    assert answer("turns", "list", "--state", "failed") == "No turns (failed).\n"
    table = answer("turns", "list")
    assert waiting in table and "waiting_for_model" in table and "created 1" in table

    shown = json.loads(answer("turns", "show", waiting, "--json"))
    assert shown == listed[1]
    text = answer("turns", "show", waiting.upper())
    assert "state     waiting_for_model" in text and f"created   {home}" in text
    # a unique start of the id will do; a start of two turns' ids (made the same minute) will not
    shared = next(i for i in range(36) if waiting[i] != queued[i])
    assert json.loads(answer("turns", "show", waiting[: max(shared + 1, 8)], "--json"))["id"] == waiting
    if shared >= 8:
        both = mnemo("turns", "show", waiting[:shared])
        assert both.exit_code == 1 and "starts several turn ids" in both.stderr
    assert "No turn" in mnemo("turns", "show", theirs[:-3]).stderr  # another person's: none of mine

    bad = mnemo("turns", "list", "--state", "done")
    assert bad.exit_code == 2 and "'done' is not one of" in bad.stderr
    for other in (theirs, new_id(), "nope"):
        missing = mnemo("turns", "show", other)
        assert missing.exit_code == 1 and "No turn" in missing.stderr and "Traceback" not in missing.output
        assert "sesame" not in missing.output


def learnt_with_model(data_dir: Path, embedder, database_url: str | None, llm_url: str, said_: str) -> str:
    """The local person's turn, learnt by the worker with the scripted chat model: its id."""

    async def go() -> str:
        chat = OpenAIChatModel(llm_url, "test-key", "scripted-model", timeout=5, max_retries=0)
        settings = Settings(data_dir=data_dir, database_url=database_url)
        memory = Memory(build_store(settings), embedder, chat, settings=settings)
        await memory.open()
        try:
            me = Scope((await memory.accounts.user("local")).id)
            job = await memory.submit(said(me, said_))
            await worker_for(memory).drain()
            return job.id
        finally:
            await memory.store.close()
            await chat.aclose()

    return asyncio.run(go())


def test_turns_show_names_what_was_dropped_and_why_never_the_text(
    tmp_path: Path, embedder, database_url: str | None, scripted_llm
) -> None:
    ramble = "I keep a long diary about my grandmother's hidden ring " * 12
    reply = extraction("I am saving for a canoe", {"category": "health"}, {"text": ramble, "message": 1})
    scripted_llm.reply_json({"facts": [*reply["facts"], "I like knees"]})
    data_dir = tmp_path / "data"
    turn_id = learnt_with_model(
        data_dir, embedder, database_url, scripted_llm.base_url, "Canoe, knees, diary."
    )
    mnemo = invoker(data_dir, database_url)

    shown = mnemo("turns", "show", turn_id)
    assert shown.exit_code == 0, shown.output
    assert "state     learnt" in shown.stdout
    assert (
        "dropped   3: no text (1), not an object (1), text is longer than 500 characters (1)" in shown.stdout
    )
    as_json = json.loads(mnemo("turns", "show", turn_id, "--json").stdout)
    assert as_json["dropped"] == {
        "no text": 1,
        "not an object": 1,
        "text is longer than 500 characters": 1,
    }
    assert len(as_json["facts"]["created"]) == 1
    assert "created 1, dropped 3" in mnemo("turns", "list").stdout
    for output in (shown.stdout, json.dumps(as_json)):
        assert "grandmother" not in output and "knees" not in output
