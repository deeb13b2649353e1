"""`mnemo turns list` and `mnemo turns show` over turns a store holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.domain import Scope, Turn, new_id
from tests.cli.test_cli import invoker
from tests.helpers import in_store, worker_for

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

    bad = mnemo("turns", "list", "--state", "done")
    assert bad.exit_code == 2 and "'done' is not one of" in bad.stderr
    for other in (theirs, new_id(), "nope"):
        missing = mnemo("turns", "show", other)
        assert missing.exit_code == 1 and "No turn" in missing.stderr and "Traceback" not in missing.output
        assert "sesame" not in missing.output
