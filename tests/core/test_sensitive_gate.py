"""The sensitive-data gate in the core: every message and every memory passes it, whichever
way it comes (a turn learnt now or queued, a person's add and edit, an import), and a blocked
value is never written anywhere: the database files are read byte by byte."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from mnemo import audit
from mnemo.batch import export
from mnemo.batch.transfer.restore import read_export
from mnemo.build import Core
from mnemo.domain import Action, Conversation, InvalidInput, Message, Scope, Status, Turn, new_id
from mnemo.providers.chat import OpenAIChatModel
from tests.fakes.embedders import RecordingEmbedder
from tests.helpers import every_row, extraction, texts
from tests.sensitive_cases import ORDINARY, SAID, needles, start_clean, stored_bytes

ALL_SAID = "\n".join(text for text, _, _ in SAID)


@pytest.fixture
def clean_files(store) -> None:
    start_clean(store)


def _assert_never_written(memory, tmp_path, caplog, *blocked: bytes) -> None:
    raw = stored_bytes(memory.store, tmp_path)
    assert b"[credential]" in raw  # the check can see what was written
    for needle in blocked:
        assert needle not in raw, needle
    logged = "\n".join(r.getMessage() for r in caplog.records).encode()
    for needle in blocked:
        assert needle not in logged, needle


async def test_a_turn_learnt_now_stores_its_messages_masked_and_no_blocked_memory(
    llm_memory, scripted_llm, alice, tmp_path, caplog, clean_files
):
    caplog.set_level(logging.DEBUG)
    proposals = [text for text, _, _ in SAID]
    scripted_llm.reply_json(extraction(*proposals))
    report = await llm_memory.remember(Turn.of(alice, ("user", ALL_SAID), ("assistant", "Noted.")))

    stored = texts(await llm_memory.list(alice))
    # credentials are blocked: no memory holds one, and the problems name the category only
    credentials = [t for t, _, k in SAID if k == "credential"]
    assert len([p for p in report.problems if "holds a credential" in p]) == len(credentials)
    assert all(needle not in p for p in report.problems for _, needle, _ in SAID)
    # cards, the IBAN and the ids are redacted: each memory is kept, masked
    assert sorted(stored) == sorted(
        [
            "My card is [card ending 4242]",
            "Charge [card ending 4242] please",
            "My IBAN is [bank account ending 3000]",
            "My SSN is [government id]",
            "Mi DNI es [government id]",
        ]
    )
    assert report.summary()["sensitive"]["credential"] == {"block": len(credentials)}
    _assert_never_written(llm_memory, tmp_path, caplog, *needles())


async def test_the_message_history_holds_the_masks(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(extraction())
    await llm_memory.remember(Turn.of(alice, ("user", ALL_SAID), ("assistant", "Noted.")))
    conversations = await llm_memory.conversations(alice.user_id)
    (user_message, _) = await llm_memory.store.conversation_messages(alice.user_id, conversations[0].id)
    assert "[credential]" in user_message.content and "[card ending 4242]" in user_message.content
    assert "[government id]" in user_message.content
    assert all(needle not in user_message.content for _, needle, _ in SAID)


async def test_a_value_the_gate_finds_in_one_message_is_masked_in_every_message_of_the_turn(
    llm_memory, scripted_llm, alice, tmp_path, caplog, clean_files
):
    """The assistant's echo of a password the person stated names no password by itself; it is
    masked all the same, in the stored messages and in what the extractor is sent."""
    caplog.set_level(logging.DEBUG)
    scripted_llm.reply_json(extraction("My password is Tr0ub4dor&3Zq"))
    await llm_memory.remember(
        Turn.of(
            alice,
            ("user", "My password is Tr0ub4dor&3Zq, and my card 4242 4242 4242 4242"),
            ("assistant", "I'll keep your password (Tr0ub4dor&3Zq) safe, and 4242 4242 4242 4242 too."),
        )
    )
    conversation = (await llm_memory.conversations(alice.user_id))[0]
    said, echoed = await llm_memory.store.conversation_messages(alice.user_id, conversation.id)
    assert said.content == "My password is [credential], and my card [card ending 4242]"
    assert echoed.content == "I'll keep your password ([credential]) safe, and [card ending 4242] too."
    sent = json.dumps(scripted_llm.chat_requests())
    assert "[credential]" in sent and "Tr0ub4dor" not in sent and "4242 4242" not in sent
    _assert_never_written(llm_memory, tmp_path, caplog, b"Tr0ub4dor", b"4242 4242")


async def test_a_value_found_later_is_masked_in_what_the_conversation_already_holds(memory, alice, bob):
    """The first turn names no password ("set the wifi to …"); the second states it as one: the
    first turn's stored message is masked too, queued or not, and another conversation (or
    another person's with the same id) keeps its words."""
    first = "Set the wifi to Tr0ub4dor&3Zq please"
    for scope in (alice, bob):
        await memory.submit(Turn.of(scope, ("user", first), ("assistant", "Done."), conversation_id="home"))
    await memory.submit(Turn.of(alice, ("user", first), conversation_id="office"))
    await memory.submit(
        Turn.of(alice, ("user", "That password is Tr0ub4dor&3Zq, remember"), conversation_id="home")
    )
    home = [m.content for m in await memory.store.conversation_messages(alice.user_id, "home")]
    assert home == ["Set the wifi to [credential] please", "Done.", "That password is [credential], remember"]
    (office,) = await memory.store.conversation_messages(alice.user_id, "office")
    assert office.content == first  # another conversation: nothing there named it a password
    bobs = await memory.store.conversation_messages(bob.user_id, "home")
    assert bobs[0].content == first


async def test_a_queued_turn_is_masked_before_it_is_queued(memory, alice, tmp_path, caplog, clean_files):
    caplog.set_level(logging.DEBUG)
    job = await memory.submit(Turn.of(alice, ("user", ALL_SAID), ("assistant", "Noted.")))
    assert job is not None
    (said, _) = await memory.store.job_messages(job)
    assert "[card ending 4242]" in said.content
    _assert_never_written(memory, tmp_path, caplog, *needles())


async def test_a_person_adding_a_credential_gets_a_clear_refusal_naming_only_the_category(
    memory, alice, tmp_path, caplog, clean_files
):
    caplog.set_level(logging.DEBUG)
    await memory.add(alice, "My password is [credential] was stored masked")  # the check can see
    for text, needle, kind in SAID:
        if kind != "credential":
            continue
        with pytest.raises(InvalidInput) as refused:
            await memory.add(alice, text)
        assert "credential" in str(refused.value) and needle not in str(refused.value)
    fact = await memory.add(alice, "I like tea")
    for text, _, kind in SAID:
        if kind == "credential":
            with pytest.raises(InvalidInput):
                await memory.edit(alice, fact.id, text)
    assert texts(await memory.list(alice)) == ["I like tea", "My password is [credential] was stored masked"]
    _assert_never_written(memory, tmp_path, caplog, *needles()[:7])


async def test_redacted_memories_keep_only_the_last_four_digits_and_say_so_in_their_history(memory, alice):
    fact = await memory.add(alice, "My card is 4242 4242 4242 4242")
    assert fact.text == "My card is [card ending 4242]"
    (created,) = await memory.history(alice, fact.id)
    assert created.reason == "sensitive data: card redacted"
    edited = await memory.edit(alice, fact.id, "My SSN is 078-05-1120")
    assert edited.text == "My SSN is [government id]"


async def test_hold_keeps_a_memory_for_review_and_masks_the_message(llm_memory, scripted_llm, alice):
    await llm_memory.accounts.set_gate(alice.user_id, {"card": "hold"})
    scripted_llm.reply_json(extraction("My card is 4242 4242 4242 4242"))
    report = await llm_memory.remember(Turn.of(alice, ("user", "My card is 4242 4242 4242 4242")))
    (held,) = await llm_memory.list(alice, statuses=[Status.CANDIDATE])
    assert held.id in report.held
    (created,) = await llm_memory.history(alice, held.id)
    assert "holds a payment card number" in (created.reason or "")
    conversation = (await llm_memory.conversations(alice.user_id))[0]
    (message,) = await llm_memory.store.conversation_messages(alice.user_id, conversation.id)
    assert message.content == "My card is [card ending 4242]"  # the message store is not reviewed
    added = await llm_memory.add(alice, "Backup card 4000 0566 5566 5556")
    assert added.status == Status.CANDIDATE


async def test_allow_stores_as_said_and_one_persons_policy_is_theirs_alone(memory, alice, bob):
    await memory.accounts.set_gate(alice.user_id, {"card": "allow", "email": "block"})
    assert (await memory.add(alice, "Card 4242 4242 4242 4242")).text == "Card 4242 4242 4242 4242"
    assert (await memory.add(bob, "Card 4242 4242 4242 4242")).text == "Card [card ending 4242]"
    with pytest.raises(InvalidInput, match="email address"):
        await memory.add(alice, "write to me at alice@example.com")
    assert (await memory.add(bob, "write to me at bob@example.com")).text.endswith("bob@example.com")
    assert (await memory.accounts.gate(bob.user_id)).choices() == {}


async def test_a_refused_policy_change_changes_nothing(memory, alice):
    await memory.accounts.set_gate(alice.user_id, {"phone": "redact"})
    with pytest.raises(InvalidInput):
        await memory.accounts.set_gate(alice.user_id, {"card": "allow", "passport": "block"})
    assert (await memory.accounts.gate(alice.user_id)).choices() == {"phone": "redact"}


async def test_an_imported_conversation_is_masked(memory, alice, tmp_path, caplog, clean_files):
    caplog.set_level(logging.DEBUG)
    conversation = Conversation(
        new_id(),
        alice.user_id,
        None,
        memory.clock(),
        (Message("user", ALL_SAID, id=new_id(), at=memory.clock()),),
    )
    added, _ = await memory.import_conversation(conversation)
    assert added == 1
    _assert_never_written(memory, tmp_path, caplog, *needles())


@pytest.mark.parametrize("text", ORDINARY)
async def test_ordinary_numbers_are_stored_as_said(memory, alice, text):
    assert (await memory.add(Scope(alice.user_id), text)).text == text


async def test_backfill_over_messages_stored_before_the_gate_learns_nothing_it_blocks(
    llm_memory, scripted_llm, alice
):
    """Messages stored as said (before the gate, or by a store's own import) are learnt from
    through the gate all the same: each user message becomes a proposed memory here."""
    from tests.core.test_backfill import backfill
    from tests.fakes.learner import Learner

    scripted_llm.responder = Learner()
    for i, (text, _, _) in enumerate(SAID):
        pair = [Message("user", text), Message("assistant", "Noted.")]
        await llm_memory.store.save_messages(alice, f"c{i}", pair, llm_memory.clock())
    await backfill(llm_memory)
    learnt = texts(await llm_memory.list(alice, statuses=list(Status), limit=100))
    assert len(learnt) == len([k for _, _, k in SAID if k != "credential"])
    assert all(needle not in t for t in learnt for _, needle, _ in SAID)
    assert "My card is [card ending 4242]" in learnt


def _gate_events(events) -> list[dict]:
    return [e.after["gate"] | {"reason": e.reason} for e in events if e.action == Action.GATE]


async def test_every_gate_action_is_an_audit_event_naming_the_category_never_the_value(
    llm_memory, scripted_llm, alice, bob
):
    """Masked messages (queued or learnt now), refused adds and edits, blocked proposals:
    each is in the person's hash-chained log, by category, action and count."""
    await llm_memory.submit(
        Turn.of(alice, ("user", ALL_SAID), ("assistant", "Noted."), conversation_id="queued")
    )
    gated = _gate_events(await llm_memory.events(alice.user_id))
    by_kind = {(g["category"], g["action"]): g for g in gated}
    assert by_kind[("card", "redact")]["where"] == "message"
    assert by_kind[("card", "redact")]["count"] == by_kind[("credential", "block")]["count"] == 1
    assert {g["conversation_id"] for g in gated} == {"queued"}
    assert (
        by_kind[("card", "redact")]["reason"]
        == "sensitive data: card masked in 1 message(s) (policy: redact)"
    )

    with pytest.raises(InvalidInput):
        await llm_memory.add(alice, "my password is hunter2!x7")
    fact = await llm_memory.add(alice, "I like tea")
    with pytest.raises(InvalidInput):
        await llm_memory.edit(alice, fact.id, "Use sk_live_4eC39HqLyjWDarjtT1zdp7dc for the shop")
    scripted_llm.reply_json(extraction("The AWS key id is AKIAZ7QPLMXV4RTY2KWB"))
    await llm_memory.remember(Turn.of(alice, ("user", "Remember my key"), ("assistant", "Noted.")))

    events = await llm_memory.events(alice.user_id)
    refused = [g for g in _gate_events(events) if g["where"] == "memory"]
    assert [(g["category"], g["action"], g["count"]) for g in refused] == [("credential", "block", 1)] * 3
    assert all(g["reason"] == "sensitive data: a memory holding a credential was refused" for g in refused)
    logged = repr([(e.reason, e.before, e.after) for e in events])
    assert all(needle not in logged for _, needle, _ in SAID)
    assert (await llm_memory.verify_audit(alice.user_id)).ok
    assert _gate_events(await llm_memory.events(bob.user_id)) == []
    # the log's gate events stand for no fact: what was believed at any time is the facts alone
    believed = await llm_memory.list(alice, as_of=llm_memory.clock())
    assert texts(believed) == ["I like tea"]


async def test_an_export_with_gate_events_imports_and_verifies(memory, alice, tmp_path):
    await memory.submit(Turn.of(alice, ("user", "My card is 4242 4242 4242 4242"), ("assistant", "Noted.")))
    await memory.add(alice, "I like tea")
    path = tmp_path / "alice.jsonl"
    user = await memory.accounts.existing_user_by_id(alice.user_id)
    path.write_text("".join([line async for line in export.jsonl(memory, memory.accounts, user)]))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    (notice,) = [r for r in records if r["type"] == "notice"]
    assert notice["action"] == "gate" and notice["after"]["gate"]["category"] == "card"
    assert "4242 4242" not in path.read_text()
    read = read_export(path)
    assert len(read.events) == 2 and audit.verify(read.events).ok


async def test_changes_to_the_gate_at_once_all_land(memory, alice):
    """Each change is merged into what is stored in the same transaction, not into what was read
    before: four people-facing forms saved at once lose nothing."""
    kinds = ("card", "phone", "email", "bank_account")
    await asyncio.gather(*(memory.accounts.set_gate(alice.user_id, {kind: "hold"}) for kind in kinds))
    actions = (await memory.accounts.gate(alice.user_id)).actions()
    assert [actions[kind] for kind in kinds] == ["hold"] * 4
    assert actions["credential"] == "block"


@pytest.mark.parametrize("aid", ["topic", "replaces"])
async def test_a_search_aid_reaches_the_embedder_masked_as_each_persons_gate_says(
    store, embedder, settings, clock, scripted_llm, aid
):
    """The topic question and the generic form are only embedded, never stored; still, what the
    person's gate does not allow never leaves for the embedder, even when the fact's own text holds
    nothing sensitive. Bob allows cards: his go as said, his credential does not."""
    recording = RecordingEmbedder(embedder)
    chat = OpenAIChatModel(scripted_llm.base_url, "test-key", "scripted-model", timeout=5, max_retries=0)
    memory = Core(store, recording, chat, settings=settings, clock=clock).memory
    alice = Scope((await memory.accounts.user("alice")).id)
    bob = Scope((await memory.accounts.user("bob")).id)
    await memory.accounts.set_gate(bob.user_id, {"card": "allow"})
    said = "My card is 4242 4242 4242 4242 and my password is hunter2!x7"
    proposed = {"text": "I changed my bank details", "message": 1, aid: said}
    embedded = {}
    try:
        for person in (alice, bob):
            recording.texts.clear()
            scripted_llm.reply_json(extraction(proposed))
            report = await memory.remember(Turn.of(person, ("user", "I changed my bank details.")))
            assert report.problems == []
            assert texts(await memory.list(person)) == ["I changed my bank details"]
            embedded[person] = "\n".join(recording.texts)
    finally:
        await chat.aclose()
    assert "I changed my bank details" in embedded[alice]
    assert "My card is [card ending 4242] and my password is [credential]" in embedded[alice]
    assert "4242 4242 4242 4242" not in embedded[alice] and "hunter2" not in embedded[alice]
    assert "My card is 4242 4242 4242 4242 and my password is [credential]" in embedded[bob]
    assert "hunter2" not in embedded[bob]


KEY = "sk-proj-Zq3vT8wLm2Xr9Kd4Hs7Jp1Nc6Bf5Yg0A"
CARD = "4111 1111 1111 1111"


async def test_names_personas_key_labels_and_conversation_ids_pass_the_gate(memory, alice, caplog):
    """A name the person chooses (an agent's, a key's, a conversation's id) holding what their
    gate keeps out is refused, naming the kind, never the value; a persona is masked as a
    message is; what the gate allows (an email address, by default) is kept as written."""
    accounts = memory.accounts
    for make in (
        lambda: accounts.create_agent(alice.user_id, f"Bank {KEY}"),
        lambda: accounts.create_api_key(alice.user_id, f"card {CARD}"),
        lambda: memory.submit(Turn.of(alice, ("user", "hi"), conversation_id=f"pay {CARD}")),
    ):
        with pytest.raises(InvalidInput) as refused:
            await make()
        assert "keeps out of names" in str(refused.value)
        assert KEY not in str(refused.value) and "1111" not in str(refused.value)
    agent = await accounts.create_agent(
        alice.user_id, "Bank ana@example.com", persona=f"Pay with my card {CARD} when asked"
    )
    assert agent.name == "Bank ana@example.com"
    assert agent.persona == "Pay with my card [card ending 1111] when asked"
    with pytest.raises(InvalidInput, match="credential"):
        await accounts.update_agent(alice.user_id, agent.id, name=KEY)
    changed = await accounts.update_agent(alice.user_id, agent.id, persona=f"My key is {KEY}")
    assert changed.persona == "My key is [credential]" and changed.name == "Bank ana@example.com"
    assert [a.name for a in await accounts.agents(alice.user_id)] == ["Bank ana@example.com"]
    assert await memory.conversations(alice.user_id) == []
    rows = await every_row(memory.store)
    assert KEY not in rows and "1111 1111" not in rows
    assert KEY not in caplog.text and "1111 1111" not in caplog.text
