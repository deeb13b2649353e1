"""Import and export (mnemo.batch.export, mnemo.batch.transfer), on both backends.

A mnemo export comes back losslessly into an empty store: exporting the copy
gives the same file (but for the header's time) and its audit log verifies.
Conversations from OpenAI JSONL and a ChatGPT export are stored in order, once
however often they are imported; facts from JSONL are added once. A bad line
stops an import before anything is written, and an import that stopped half
way is finished by running it again.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemo.batch import export
from mnemo.batch.transfer import Format, ImportRefused, import_file
from mnemo.batch.transfer import restore as restore_module
from mnemo.domain import Category, InvalidInput, Message, Scope, SourceKind, Status, Turn
from mnemo.memory import Memory
from tests.helpers import backfill_for, into, texts

CHATGPT = Path(__file__).parent.parent / "data" / "chatgpt" / "conversations.json"


@pytest.fixture
async def other(other_store, embedder, settings, clock) -> AsyncIterator[Memory]:
    """A second, empty store on the same backend: where an export is imported."""
    memory = await Memory(other_store, embedder, None, settings=settings, clock=clock).open()
    yield memory
    await memory.close()


async def _seed(memory: Memory, clock) -> dict[str, str]:
    """Alice's history, with a bit of everything; and Bob's, which must never leave with hers."""
    alice = Scope((await memory.accounts.user("alice")).id)
    chef = await memory.accounts.create_agent(alice.user_id, "Chef", private=True, persona="Cooks")
    lisbon = await memory.add(alice, "I live in Lisbon", category=Category.IDENTITY)
    clock.advance(minutes=1)
    await memory.edit(alice, lisbon.id, "I live in Porto", version=1, reason="moved")
    await memory.add(alice, "I drink green tea", pinned=True)
    await memory.add(alice, "I drink green tea")  # reinforced
    kayak = await memory.add(alice, "I own a red kayak")
    await memory.retract(alice, kayak.id, reason="sold it")
    held = await memory.add(alice, "I might move to Oslo", held=True)
    await memory.reject(alice, held.id)
    pin = await memory.add(alice, "My PIN hint is my cat's name")
    await memory.purge(alice, pin.id)
    await memory.add(Scope(alice.user_id, chef.id), "I cook with cast iron")
    # two facts of one instant keep their order
    await memory.add(alice, "I play the cello")
    await memory.add(alice, "I speak Portuguese")
    clock.advance(minutes=1)
    await memory.remember(
        Turn.of(alice, ("user", "Remember that I have a cat named Miso"), ("assistant", "Ok!"))
    )
    await memory.store.save_messages(
        Scope(alice.user_id, chef.id), "chef-talk", [Message("user", "What goes with miso soup?")], clock.now
    )
    bob = Scope((await memory.accounts.user("bob")).id)
    await memory.add(bob, "Bob's secret: I collect stamps")
    await memory.store.save_messages(bob, "bob-talk", [Message("user", "Bob's private chat")], clock.now)
    return {"alice": alice.user_id, "lisbon": lisbon.id}


async def _export(memory: Memory, name: str, path: Path) -> list[dict]:
    user = await memory.accounts.find_user(name)
    lines = [line async for line in export.jsonl(memory, memory.accounts, user)]
    path.write_text("".join(lines))
    return [json.loads(line) for line in lines]


def _without_time(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "exported_at"} for r in records]


async def test_an_export_comes_back_losslessly_into_an_empty_store(memory, other, clock, tmp_path):
    seeded = await _seed(memory, clock)
    await memory.accounts.set_gate(seeded["alice"], {"card": "allow", "phone": "hold"})
    await memory.accounts.set_review_stale(seeded["alice"], False)
    await memory.accounts.set_record_recalls(seeded["alice"], False)
    await memory.remember_conversation(Scope(seeded["alice"]), "chef-talk", False)
    first = await _export(memory, "alice", tmp_path / "alice.jsonl")
    assert first[0]["type"] == "header" and first[0]["format"] == export.FORMAT
    assert first[0]["user"]["sensitive_gate"] == {"card": "allow", "phone": "hold"}
    assert first[0]["user"]["review_stale"] is False
    assert first[0]["user"]["id"] == seeded["alice"] and first[-1]["type"] == "end"
    assert first[-1] == {
        "type": "end",
        "agents": 1,
        "facts": 9,
        "events": 14,
        "conversations": 2,
        "messages": 3,
        "recalls": 0,
    }
    assert "Bob" not in (tmp_path / "alice.jsonl").read_text()  # another user's data never leaves

    report = await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    assert (report.format, report.user_created, report.facts_added, report.events_added) == (
        "mnemo",
        True,
        9,
        14,
    )
    assert (report.conversations_added, report.messages_added, report.audit_ok) == (2, 3, True)
    assert (await other.accounts.gate(seeded["alice"])).choices() == {"card": "allow", "phone": "hold"}
    chef_talk = await other.conversation(seeded["alice"], "chef-talk")
    assert chef_talk.summary.remember is False  # the conversation's switch comes along
    imported = await other.store.get_user(seeded["alice"])
    assert (imported.review_stale, imported.record_recalls) == (False, False)  # the switches come along

    clock.advance(hours=1)
    again = await _export(other, "alice", tmp_path / "again.jsonl")
    assert _without_time(again) == _without_time(first)
    assert again[0]["exported_at"] != first[0]["exported_at"]
    alice = Scope(seeded["alice"])
    assert (await other.verify_audit(alice.user_id)).ok
    assert texts(await other.search("where do I live?", alice))[0] == "I live in Porto"  # vectors and words
    assert "I live in Porto" in texts(await other.recall("where do I live?", alice))
    fact = await other.get(alice, seeded["lisbon"])
    assert (fact.version, fact.category) == (2, Category.IDENTITY)
    # and it carries on: a new change chains after the imported log
    await other.edit(alice, fact.id, "I live in Braga", version=2)
    assert (await other.verify_audit(alice.user_id)).ok


async def test_importing_an_export_twice_adds_nothing_and_another_users_memories_are_not_merged(
    memory, other, clock, tmp_path
):
    await _seed(memory, clock)
    await _export(memory, "alice", tmp_path / "alice.jsonl")
    await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    report = await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    assert (report.facts_added, report.facts_present, report.events_added) == (0, 9, 0)
    assert (report.conversations_added, report.conversations_present, report.agents_added) == (0, 2, 0)
    assert len(await other.events((await other.accounts.find_user("alice")).id)) == 14

    # a user with memories of their own: a history cannot be merged into another
    carol = Scope((await other.accounts.user("carol")).id)
    await other.add(carol, "I am Carol")
    with pytest.raises(ImportRefused, match="another id"):
        await import_file(into(other), tmp_path / "alice.jsonl", user="carol")
    # the export's user is here already, under another name
    with pytest.raises(ImportRefused, match="already here as 'alice'"):
        await import_file(into(other), tmp_path / "alice.jsonl", user="dave")


async def test_an_interrupted_import_of_an_export_finishes_on_the_next_run(
    memory, other, clock, tmp_path, monkeypatch
):
    await _seed(memory, clock)
    first = await _export(memory, "alice", tmp_path / "alice.jsonl")
    monkeypatch.setattr(restore_module, "BATCH", 4)
    calls = {"facts": 0, "conversations": 0}
    import_facts, import_conversation = other.store.import_facts, other.store.import_conversation

    async def failing_facts(*args):
        calls["facts"] += 1
        if calls["facts"] == 3:
            raise RuntimeError("the power went out")
        return await import_facts(*args)

    async def failing_conversation(*args):
        calls["conversations"] += 1
        if calls["conversations"] == 2:
            raise RuntimeError("the power went out again")
        return await import_conversation(*args)

    monkeypatch.setattr(other.store, "import_facts", failing_facts)
    with pytest.raises(RuntimeError):
        await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    alice = (await other.accounts.find_user("alice")).id
    assert len(await other.events(alice)) == 8  # two batches of four events made it
    assert (await other.verify_audit(alice)).ok

    monkeypatch.setattr(other.store, "import_facts", import_facts)
    monkeypatch.setattr(other.store, "import_conversation", failing_conversation)
    with pytest.raises(RuntimeError):
        await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    monkeypatch.setattr(other.store, "import_conversation", import_conversation)
    report = await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    assert (report.facts_added, report.conversations_added, report.conversations_present) == (0, 1, 1)

    again = await _export(other, "alice", tmp_path / "again.jsonl")
    assert _without_time(again) == _without_time(first)  # each fact, event and message once
    assert (await other.verify_audit(alice)).ok


async def test_a_cut_short_or_altered_export_is_refused_and_writes_nothing(memory, other, clock, tmp_path):
    await _seed(memory, clock)
    await _export(memory, "alice", tmp_path / "alice.jsonl")
    lines = (tmp_path / "alice.jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:-3]))
    with pytest.raises(InvalidInput, match="cut short"):
        await import_file(into(other), cut, user="alice")
    altered = tmp_path / "altered.jsonl"
    altered.write_text("".join(lines).replace("I live in Lisbon", "I live in Madrid"))
    with pytest.raises(InvalidInput, match="does not verify"):
        await import_file(into(other), altered, user="alice")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:3]) + '{"type": "fact", "id": \n' + "".join(lines[4:]))
    with pytest.raises(InvalidInput, match="line 4: not JSON"):
        await import_file(into(other), broken, user="alice")
    assert await other.accounts.find_user("alice") is None


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("confidence", float("nan"), "confidence"),
        ("mentions", -5, "out of range"),
        ("version", 2**63, "out of range"),
        ("agent_id", "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c", "not one of the file's agents"),
        ("text", "I live in \ud800", "lone surrogate"),
    ],
)
async def test_an_edited_export_a_store_cannot_hold_is_refused_before_anything_is_written(
    memory, other, clock, tmp_path, field, value, why
):
    """Its digests are anyone's to compute again, so a file is checked for what mnemo could have
    written: a refusal names the line, and no user is left behind."""
    await _seed(memory, clock)
    records = await _export(memory, "alice", tmp_path / "alice.jsonl")
    fact = next(r for r in records if r["type"] == "fact")
    fact[field] = value
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(InvalidInput, match=why):
        await import_file(into(other), edited, user="alice")
    assert await other.accounts.find_user("alice") is None


async def test_a_persons_switches_are_true_or_false_and_on_when_left_out(memory, other, clock, tmp_path):
    await _seed(memory, clock)
    records = await _export(memory, "alice", tmp_path / "alice.jsonl")
    edited = tmp_path / "edited.jsonl"
    for value in ("false", 0):
        records[0]["user"]["review_stale"] = value
        edited.write_text("".join(json.dumps(r) + "\n" for r in records))
        with pytest.raises(InvalidInput, match='"review_stale" must be true or false'):
            await import_file(into(other), edited, user="alice")
        assert await other.accounts.find_user("alice") is None
    records[0]["user"]["review_stale"] = None
    del records[0]["user"]["record_recalls"]
    edited.write_text("".join(json.dumps(r) + "\n" for r in records))
    await import_file(into(other), edited, user="alice")
    imported = await other.accounts.find_user("alice")
    assert (imported.review_stale, imported.record_recalls) == (True, True)


# -- conversations ------------------------------------------------------------------------------


def _jsonl(path: Path, *records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


OPENAI = [
    {
        "id": "chat-1",
        "created": 1709290800,
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "I just adopted a cat named Miso."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "t1", "content": "ok"},
            {"role": "assistant", "content": [{"type": "text", "text": "Congratulations on Miso!"}]},
        ],
    },
    [
        {"role": "user", "content": "I work as a nurse."},
        {"role": "assistant", "content": "Thanks for your work."},
    ],
    [
        {"role": "user", "content": "I work as a nurse."},
        {"role": "assistant", "content": "Thanks for your work."},
    ],
    {"messages": [{"role": "system", "content": "only a system prompt"}]},
]


async def test_a_jsonl_file_whose_first_line_is_longer_than_a_megabyte_is_told_by_that_line(memory, tmp_path):
    long_turn = {"messages": [{"role": "user", "content": "I keep a diary. " + "Today was calm. " * 200_000}]}
    path = _jsonl(tmp_path / "chats.jsonl", long_turn, OPENAI[1])
    assert path.stat().st_size > 3_000_000
    report = await import_file(into(memory), path, user="local")
    assert (report.format, report.conversations_added) == ("openai", 2)


async def _conversations(memory: Memory, user_id: str) -> list:
    return await memory.store.list_conversations(user_id)


async def test_openai_jsonl_is_stored_as_conversations_in_order_once(memory, clock, tmp_path):
    path = _jsonl(tmp_path / "chats.jsonl", *OPENAI)
    chef_owner = await memory.accounts.user("local")
    chef = await memory.accounts.create_agent(chef_owner.id, "Chef")
    report = await import_file(into(memory), path, user="local", agent="Chef")
    assert (report.format, report.conversations, report.conversations_added) == ("openai", 3, 2)
    assert (report.conversations_present, report.conversations_empty, report.messages_added) == (1, 1, 4)
    stored = await _conversations(memory, chef_owner.id)
    assert [[(m.role, m.content) for m in c.messages] for c in stored] == [
        [("user", "I just adopted a cat named Miso."), ("assistant", "Congratulations on Miso!")],
        [("user", "I work as a nurse."), ("assistant", "Thanks for your work.")],
    ]
    assert stored[0].created_at.timestamp() == 1709290800 and stored[1].created_at == clock.now
    assert {c.agent_id for c in stored} == {chef.id}
    assert all(a.at < b.at for c in stored for a, b in zip(c.messages, c.messages[1:], strict=False))

    again = await import_file(into(memory), path, user="local", agent="Chef")
    assert (again.conversations_added, again.conversations_present, again.messages_added) == (0, 3, 0)
    assert await _conversations(memory, chef_owner.id) == stored
    # nothing was learnt from them: that is backfill's job
    assert await memory.list(Scope(chef_owner.id, all_agents=True)) == []


async def test_a_chatgpt_export_keeps_the_branch_that_was_shown(memory, tmp_path):
    report = await import_file(into(memory), CHATGPT, user="local")
    assert (report.format, report.conversations_added, report.conversations_empty) == ("chatgpt", 2, 1)
    user = await memory.accounts.find_user("local")
    trip, plant = await _conversations(memory, user.id)
    assert [(m.role, m.content) for m in trip.messages] == [
        ("user", "I'm planning a trip to Porto in May."),
        ("assistant", "Lovely! Do you know anyone there?"),
        ("user", "My sister Ana lives there, so I'll stay with her."),
        ("assistant", "Staying with Ana sounds perfect; May in Porto is mild."),
    ]
    assert trip.created_at.timestamp() == 1709290800.0
    assert [m.at.timestamp() for m in trip.messages] == [
        1709290800.25,
        1709290805.5,
        1709290950.0,
        1709290960.0,
    ]
    assert [(m.role, m.content) for m in plant.messages] == [
        ("user", "What plant is this? It sits on my desk."),
        ("assistant", "It looks like a monstera."),
    ]
    again = await import_file(into(memory), CHATGPT, user="local")
    assert (again.conversations_added, again.conversations_present) == (0, 2)
    assert len(await _conversations(memory, user.id)) == 2


async def test_an_interrupted_conversation_import_finishes_on_the_next_run(memory, tmp_path, monkeypatch):
    path = _jsonl(
        tmp_path / "chats.jsonl", *[[{"role": "user", "content": f"I have {n} plants"}] for n in range(6)]
    )
    real = memory.store.import_conversation
    calls = []

    async def crash_on_the_fourth(conversation, *rest):
        calls.append(conversation.id)
        if len(calls) == 4:
            raise RuntimeError("killed")
        return await real(conversation, *rest)

    monkeypatch.setattr(memory.store, "import_conversation", crash_on_the_fourth)
    with pytest.raises(RuntimeError):
        await import_file(into(memory), path, user="local")
    monkeypatch.setattr(memory.store, "import_conversation", real)
    report = await import_file(into(memory), path, user="local")
    assert (report.conversations_added, report.conversations_present) == (3, 3)
    stored = await _conversations(memory, (await memory.accounts.find_user("local")).id)
    assert sorted(c.messages[0].content for c in stored) == [f"I have {n} plants" for n in range(6)]


@pytest.mark.parametrize(
    ("records", "fmt", "message"),
    [
        ([OPENAI[1], "{not json", OPENAI[0]], Format.OPENAI, "line 2: not JSON"),
        ([OPENAI[1], OPENAI[0], {"messages": "hello"}], Format.OPENAI, "line 3: expected a list of messages"),
        ([[{"role": "wizard", "content": "hi"}]], Format.OPENAI, "line 1, message 1: unknown role 'wizard'"),
        (
            [{"text": "I like tea"}, {"text": "I like figs", "category": "fruit"}],
            Format.FACTS,
            "line 2: unknown",
        ),
        ([{"text": "I like tea"}, {"text": "  "}], Format.FACTS, "line 2: a memory needs some text"),
        (
            [{"text": "I like tea", "valid_from": "last year"}],
            Format.FACTS,
            "line 1: 'last year' is not a time",
        ),
        (
            [{"text": "I like tea", "agent": "Nobody"}],
            Format.FACTS,
            "line 1: agent: user 'local' has no agent",
        ),
        (['{"mapping": {}}'], Format.CHATGPT, "expected a JSON array"),
    ],
)
async def test_a_bad_line_is_named_and_nothing_is_written(memory, tmp_path, records, fmt, message):
    path = _jsonl(tmp_path / "bad.jsonl", *records)
    with pytest.raises(InvalidInput, match=message):
        await import_file(into(memory), path, user="local", fmt=fmt)
    user = await memory.accounts.find_user("local")
    assert user is None or (
        await _conversations(memory, user.id) == []
        and await memory.list(Scope(user.id, all_agents=True)) == []
    )


# -- facts ---------------------------------------------------------------------------------------


async def test_facts_jsonl_adds_each_fact_once_as_an_import(memory, tmp_path):
    local = await memory.accounts.user("local")
    travel = await memory.accounts.create_agent(local.id, "Travel")
    path = _jsonl(
        tmp_path / "facts.jsonl",
        {"text": "I am allergic to peanuts", "category": "identity", "pinned": True},
        {"text": "I moved to Porto", "valid_from": "2025-06-01"},
        {"text": "I prefer window seats", "category": "preference", "agent": "Travel"},
        {"text": "i am allergic to peanuts."},
    )
    report = await import_file(into(memory), path, user="local")
    assert (report.format, report.facts, report.facts_added, report.facts_present) == ("facts", 4, 3, 1)
    facts = {f.text: f for f in await memory.list(Scope(local.id, all_agents=True))}
    peanuts = facts["I am allergic to peanuts"]
    assert peanuts.pinned and peanuts.category == Category.IDENTITY and peanuts.mentions == 1
    assert peanuts.source.kind == SourceKind.IMPORT and peanuts.status == Status.ACTIVE
    assert facts["I moved to Porto"].valid_from.date().isoformat() == "2025-06-01"
    assert facts["I prefer window seats"].agent_id == travel.id
    assert [e.actor for e in await memory.history(Scope(local.id), peanuts.id)] == ["import"]

    dry = await import_file(into(memory), path, user="local", dry_run=True)
    assert (dry.facts_added, dry.facts_present) == (0, 4)
    again = await import_file(into(memory), path, user="local")
    assert (again.facts_added, again.facts_present) == (0, 4)
    assert len(await memory.events(local.id)) == 3  # nothing reinforced, nothing new


async def test_a_dry_run_writes_nothing(memory, tmp_path):
    path = _jsonl(tmp_path / "chats.jsonl", *OPENAI)
    report = await import_file(into(memory), path, user="newcomer", dry_run=True)
    assert (report.dry_run, report.conversations_added, report.messages_added) == (True, 2, 4)
    assert await memory.accounts.find_user("newcomer") is None


async def test_backfill_marks_travel_with_the_conversations(llm_memory, other, scripted_llm, tmp_path):
    """What backfill learnt is learnt on the copy too: an import keeps the marks, so backfill
    there has nothing left to learn but the turn that was never learnt."""
    from tests.fakes.learner import Learner

    scripted_llm.responder = learner = Learner()
    alice = Scope((await llm_memory.accounts.user("alice")).id)
    at = llm_memory.clock()
    for text in ("I play the cello", "My sister Ana lives in Porto"):
        pair = [Message("user", text), Message("assistant", "Noted.")]
        await llm_memory.store.save_messages(alice, "c1", pair, at)
    job = backfill_for(llm_memory)
    await job.run(await job.new_run(), apply=True)
    assert sum(learner.extracted.values()) == 2
    await llm_memory.store.save_messages(alice, "c1", [Message("user", "I keep bees")], at)

    records = await _export(llm_memory, "alice", tmp_path / "alice.jsonl")
    (conversation,) = [r for r in records if r["type"] == "conversation"]
    assert len(conversation["backfill"]) == 2
    await import_file(into(other), tmp_path / "alice.jsonl", user="alice")
    copied = await other.store.backfill_marks(alice.user_id, ["c1"])
    assert sorted(m.turn_id for m in copied) == sorted(r["turn_id"] for r in conversation["backfill"])

    copy = Memory(other.store, other.embedder, llm_memory.chat, settings=other.settings, clock=other.clock)
    again = backfill_for(copy)
    await again.run(await again.new_run(), apply=True)
    assert learner.extracted["I keep bees"] == 1  # the new turn only
    assert learner.extracted["I play the cello"] == learner.extracted["My sister Ana lives in Porto"] == 1
