"""Forgetting that forgets: erasing a memory erases the messages it was learnt from, erasing a
conversation removes it whole, each with a signed receipt, and nothing erased is learnt again
(the extractor, backfill, a second import of the same conversation)."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest

from mnemo import audit
from mnemo.domain import Conversation, Message, NotFound, Scope, Status, Turn
from tests.core.test_backfill import backfill, said, user
from tests.fakes.learner import Learner
from tests.helpers import every_row, texts

PIN = "My bank PIN is 660311"
SPICE = "I hate coriander"
EVERYTHING = (Status.ACTIVE, Status.CANDIDATE, Status.RETRACTED, Status.REJECTED, Status.SUPERSEDED)


@pytest.fixture
def learner(scripted_llm) -> Learner:
    scripted_llm.responder = learner = Learner()
    return learner


async def learnt(memory, scope: Scope) -> list:
    return await memory.list(Scope(scope.user_id, all_agents=True), statuses=EVERYTHING, limit=1000)


async def test_erasing_a_memory_erases_the_messages_it_came_from(llm_memory, learner, alice, bob):
    """The message it was learnt from and another that says it in the same words lose their
    text and keep a marker; the conversation's other messages, and bob's same words, stay."""
    await said(llm_memory, alice, "c1", 2, PIN, "I like long walks")
    await said(llm_memory, bob, "c3", 1, PIN)
    await backfill(llm_memory)
    await said(llm_memory, alice, "c2", 1, "remember: my bank pin is 660311!")  # not learnt from
    pin = next(f for f in await learnt(llm_memory, alice) if f.text == PIN)
    assert pin.source.message_ids

    plan = await llm_memory.erasure_plan(alice, pin.id)
    assert [f.id for f in plan.facts] == [pin.id] and len(plan.messages) == 2 and plan.cited_by == ()
    fact, receipt = await llm_memory.purge(alice, pin.id)

    assert fact.purged and fact.text == ""
    c1 = await llm_memory.messages(alice.user_id, "c1")
    assert [(m.content, m.erased_at is not None) for m in c1] == [
        ("", True),
        ("Noted.", False),
        ("I like long walks", False),
        ("Noted.", False),
    ]
    c2 = await llm_memory.messages(alice.user_id, "c2")
    assert c2[0].content == "" and c2[0].erased_at == receipt.at
    assert (await llm_memory.messages(bob.user_id, "c3"))[0].content == PIN
    assert "660311" not in await every_row_of(llm_memory, alice)
    body = receipt.body
    assert body["kind"] == "memory" and body["erased"]["facts"] == [pin.id]
    assert sorted(body["erased"]["messages"]) == sorted(m for _, m in plan.messages)
    assert body["erased"]["counts"]["messages"] == 2
    assert "660311" not in repr(receipt) and PIN not in repr(receipt)
    assert body["chain_head"] == (await llm_memory.events(alice.user_id))[-1].hash
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def every_row_of(memory, scope: Scope) -> str:
    """Every row of the database that names the user (the test's database holds bob's too)."""
    return "\n".join(line for line in (await every_row(memory.store)).split("), (") if scope.user_id in line)


async def test_the_plan_names_the_memories_that_keep_an_erased_message(llm_memory, scripted_llm, alice):
    """Two memories learnt from one message: erasing one erases the message, and the other is
    named first (it stays, without the words it came from)."""
    from mnemo.domain import Turn
    from tests.helpers import extraction

    scripted_llm.reply_json(extraction(SPICE, "I cook every Sunday"))
    scripted_llm.reply_json({"decisions": []})
    await llm_memory.remember(
        Turn.of(alice, ("user", "I hate coriander and I cook every Sunday"), ("assistant", "Noted."))
    )
    spice, sunday = sorted(await learnt(llm_memory, alice), key=lambda f: f.text != SPICE)
    assert spice.source.message_ids == sunday.source.message_ids

    plan = await llm_memory.erasure_plan(alice, spice.id)
    assert [f.id for f in plan.cited_by] == [sunday.id]
    await llm_memory.purge(alice, spice.id)
    assert texts(await llm_memory.list(alice)) == ["I cook every Sunday"]
    said_it = await llm_memory.messages(alice.user_id, spice.source.conversation_id)
    assert said_it[0].content == "" and said_it[0].erased_at is not None


async def test_an_erased_text_is_not_learnt_again(llm_memory, learner, alice):
    """Backfill forced over the conversation again, and a new turn saying it again: the
    extractor proposes it, and it is dropped and counted."""
    await said(llm_memory, alice, "c1", 2, PIN, SPICE)
    await backfill(llm_memory)
    pin = next(f for f in await learnt(llm_memory, alice) if f.text == PIN)
    await llm_memory.purge(alice, pin.id)

    await said(llm_memory, alice, "c2", 1, PIN)  # said again, in the same words
    report = await backfill(llm_memory, force=True)
    # the first run's, and c2's: the erased message itself is never read again
    assert learner.extracted[PIN] == 2
    assert user(report, "alice").forgotten == 1
    left = await learnt(llm_memory, alice)
    assert [f.text for f in left if not f.purged] == [SPICE]
    assert not [e for e in await llm_memory.events(alice.user_id) if "660311" in repr(e)]


async def test_the_persons_own_add_may_bring_an_erased_text_back(memory, alice):
    """Only learning is held back: the person writing it again themselves is heard."""
    fact = await memory.add(alice, PIN)
    await memory.purge(alice, fact.id)
    assert await memory.forgotten.dropped(alice.user_id, [PIN.upper() + "."]) == {PIN.upper() + "."}
    again = await memory.add(alice, PIN)
    assert again.id != fact.id and texts(await memory.list(alice)) == [PIN]
    assert await memory.forgotten.dropped(alice.user_id, [PIN]) == set()


async def test_erased_texts_are_kept_as_keyed_hashes_per_user(memory, alice, bob):
    """No erased text and no plain hash of one is kept; bob saying the same is not dropped."""
    fact = await memory.add(alice, PIN)
    await memory.purge(alice, fact.id)
    rows = await every_row(memory.store)
    assert "660311" not in rows and fact.text_hash not in rows
    assert await memory.forgotten.dropped(bob.user_id, [PIN]) == set()


async def test_erasing_a_conversation_removes_it_its_jobs_and_optionally_what_was_learnt(
    llm_memory, learner, alice, bob
):
    await said(llm_memory, alice, "c1", 2, PIN)
    await said(llm_memory, alice, "c2", 1, SPICE)
    await said(llm_memory, bob, "c1", 1, "I keep bees")  # the same conversation id, bob's own
    await backfill(llm_memory)
    plan = await llm_memory.conversation_erasure_plan(alice.user_id, "c1")
    assert [f.text for f in plan.cited_by] == [PIN] and plan.facts == ()

    receipt = await llm_memory.erase_conversation(alice.user_id, "c1")
    assert await llm_memory.messages(alice.user_id, "c1") == []
    assert (await llm_memory.messages(bob.user_id, "c1"))[0].content == "I keep bees"
    assert await llm_memory.store.backfill_marks(alice.user_id, ["c1"]) == []
    assert texts(await llm_memory.list(alice)) == sorted([PIN, SPICE])  # not asked: they stay
    assert receipt.kind == "conversation" and receipt.body["erased"]["conversations"] == ["c1"]
    assert receipt.body["erased"]["counts"]["conversations"] == 1
    with pytest.raises(NotFound):
        await llm_memory.erase_conversation(alice.user_id, "c1")

    receipt = await llm_memory.erase_conversation(alice.user_id, "c2", with_facts=True)
    assert texts(await llm_memory.list(alice)) == [PIN]
    assert receipt.body["erased"]["counts"]["facts"] == 1
    assert "coriander" not in await every_row_of(llm_memory, alice)
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def test_an_erased_conversation_does_not_come_back_with_an_import(llm_memory, learner, alice):
    """An export taken before the erasure, imported again: its conversation's messages are
    dropped (they were erased), and the report counts them."""
    await said(llm_memory, alice, "c1", 2, PIN)
    before = await llm_memory.conversations(alice.user_id)
    await llm_memory.erase_conversation(alice.user_id, "c1")
    old = copy.deepcopy(before[0])
    assert await llm_memory.import_conversation(old) == (0, 2)  # the PIN and its reply
    assert await llm_memory.messages(alice.user_id, "c1") == []
    with pytest.raises(NotFound):  # not made again, empty
        await llm_memory.conversation_erasure_plan(alice.user_id, "c1")


async def test_a_receipt_checks_out_and_a_changed_one_does_not(memory, alice, bob):
    fact = await memory.add(alice, PIN)
    _, receipt = await memory.purge(alice, fact.id)
    document = {"body": receipt.body, "signature": receipt.signature}
    assert await memory.check_receipt(document) == []
    assert await memory.check_receipt(document, alice.user_id) == []
    assert await memory.check_receipt(document, bob.user_id) == ["it is a receipt of another user's erasure"]
    assert receipt.body["public_key"] == await memory.receipt_key()

    changed = copy.deepcopy(document)
    changed["body"]["erased"]["facts"] = []
    assert "signature does not match" in (await memory.check_receipt(changed))[0]
    forged = copy.deepcopy(document)
    forged["body"]["public_key"] = "A" * 43 + "="
    assert "not this server's" in (await memory.check_receipt(forged))[0]
    for junk in (None, [], {"body": "x", "signature": "y"}, {"body": {}, "signature": "%%%"}):
        assert await memory.check_receipt(junk)
    assert [r.id for r in await memory.receipts(alice.user_id)] == [receipt.id]
    assert await memory.receipts(bob.user_id) == []
    with pytest.raises(NotFound):
        await memory.receipt(bob.user_id, receipt.id)
    assert receipt.body["chain_head"] != audit.GENESIS


async def test_conversations_and_messages_carry_when_they_were_erased(memory, alice):
    at = memory.clock() - timedelta(days=1)
    message = Message("user", PIN)
    await memory.store.save_messages(alice, "c1", [message], at)
    fact = await memory.add(alice, PIN)
    await memory.purge(alice, fact.id)
    (exported,) = await memory.conversations(alice.user_id)
    assert isinstance(exported, Conversation)
    assert [(m.content, m.erased_at is not None) for m in exported.messages] == [("", True)]


async def test_erasing_everything_leaves_the_person_their_key_and_a_verified_log(
    llm_memory, learner, alice, bob
):
    """Every memory's text and where it came from, conversation (its id too), queued turn,
    vector, agent (its name and persona) and key but the one in use (its label overwritten)
    goes; the person and their audit log (its texts erased) stay; bob is untouched."""
    await said(llm_memory, alice, "divorce-lawyer", 2, PIN, SPICE)
    await said(llm_memory, bob, "c1", 1, "I keep bees")
    await backfill(llm_memory)
    agent = await llm_memory.accounts.create_agent(
        alice.user_id, "Chef Rosalind", persona="You cook for Rosalind, who is pregnant"
    )
    await llm_memory.add(Scope(alice.user_id, agent.id), "I make miso on Sundays")
    kept, _ = await llm_memory.accounts.create_api_key(alice.user_id, "Rosalind's laptop")
    await llm_memory.accounts.create_api_key(alice.user_id, "old phone")
    await llm_memory.submit(Turn.of(alice, ("user", "I fly to Oslo on May 3"), conversation_id="oslo-trip"))

    plan = await llm_memory.everything_plan(alice.user_id)
    assert len(plan.facts) == 3 and plan.conversations and plan.keys
    receipt = await llm_memory.erase_everything(alice.user_id, keep_key=kept.id)
    counts = receipt.body["erased"]["counts"]
    assert counts["facts"] == 3 and counts["keys"] == 1 and counts["jobs"] >= 1 and counts["agents"] == 1
    assert counts["conversations"] == 2 and receipt.body["erased"]["conversations"] == []

    rows = await every_row_of(llm_memory, alice)
    for said_before in ("660311", "coriander", "miso", "Oslo", "old phone", "Rosalind", "pregnant"):
        assert said_before not in rows, said_before
    for conversation in ("divorce-lawyer", "oslo-trip"):
        assert conversation not in rows, conversation
    [key] = await llm_memory.accounts.api_keys(alice.user_id)
    assert key.id == kept.id and key.name == "kept when everything was erased"
    assert await llm_memory.accounts.agents(alice.user_id) == []
    assert await llm_memory.jobs(alice.user_id) == []
    assert texts(await llm_memory.list(Scope(alice.user_id, all_agents=True))) == []
    assert (await llm_memory.verify_audit(alice.user_id)).ok
    assert texts(await llm_memory.list(bob)) == ["I keep bees"]
    assert (await llm_memory.messages(bob.user_id, "c1"))[0].content == "I keep bees"
    # and nothing of it comes back: backfill finds no conversation of hers to learn from
    report = await backfill(llm_memory, force=True)
    assert [u.user for u in report.users] == ["bob"]


async def test_about_a_subject_lists_what_holds_its_words_and_erases_what_is_ticked(memory, alice, bob):
    at = memory.clock()
    await memory.store.save_messages(alice, "c1", [Message("user", "My sister moved to BERLIN")], at)
    await memory.store.save_messages(bob, "c1", [Message("user", "I love Berlin")], at)
    sister = await memory.add(alice, "My sister lives in Berlin")
    trip = await memory.add(alice, "I was in Berlin in 2019")
    await memory.add(alice, "I live in Lisbon")
    facts, messages = await memory.about(alice.user_id, "berlin")
    assert sorted(f.id for f in facts) == sorted([sister.id, trip.id])
    assert [(c, t) for c, _, t in messages] == [("c1", "My sister moved to BERLIN")]
    assert await memory.about(alice.user_id, "   ") == ([], [])

    receipt = await memory.erase_selection(alice.user_id, [sister.id], [messages[0][1]])
    assert receipt.kind == "selection" and receipt.body["erased"]["facts"] == [sister.id]
    assert texts(await memory.list(alice)) == sorted(["I was in Berlin in 2019", "I live in Lisbon"])
    assert (await memory.messages(alice.user_id, "c1"))[0].content == ""
    assert (await memory.messages(bob.user_id, "c1"))[0].content == "I love Berlin"
    with pytest.raises(NotFound):
        await memory.erase_selection(alice.user_id, [], ["no-such-message"])
    with pytest.raises(NotFound):  # bob's message is no message of alice's
        bobs = (await memory.messages(bob.user_id, "c1"))[0].id
        await memory.erase_selection(alice.user_id, [], [bobs])
    with pytest.raises(NotFound):
        await memory.erase_selection(bob.user_id, [trip.id], [])


async def test_a_message_erased_while_its_turn_is_learnt_is_not_learnt(llm_memory, scripted_llm, alice):
    """The model is still thinking when the person erases the message: the learnt batch is
    refused under the user's lock, and the turn, read again later, teaches nothing of it."""
    import asyncio
    import json

    from tests.helpers import extraction, worker_for

    job = await llm_memory.submit(Turn.of(alice, ("user", PIN), ("assistant", "Noted.")))
    scripted_llm.stall(1.0, json.dumps(extraction(PIN)))
    scripted_llm.reply_json(extraction())  # the turn, read again: nothing left to learn
    worker = worker_for(llm_memory, backoff=timedelta(seconds=0))
    learning = asyncio.create_task(worker.run_once())
    await asyncio.sleep(0.3)  # the model has the turn
    said = await llm_memory.messages(alice.user_id, job.conversation_id)
    await llm_memory.erase_selection(alice.user_id, [], [said[0].id])
    await learning
    assert await llm_memory.list(Scope(alice.user_id, all_agents=True), statuses=EVERYTHING) == []
    await worker.drain()
    assert await llm_memory.list(Scope(alice.user_id, all_agents=True), statuses=EVERYTHING) == []
    assert "660311" not in await every_row_of(llm_memory, alice)


async def test_a_memory_erased_while_the_same_text_is_learnt_is_not_learnt_again(memory, alice):
    from mnemo.domain import Action, Change, Conflict, LearntFrom, Source, SourceKind
    from mnemo.write import changes

    fact = await memory.add(alice, PIN)
    await memory.purge(alice, fact.id)
    again = changes.new_fact(
        alice, PIN, now=memory.clock(), source=Source(SourceKind.USER_MESSAGE), embedding_model="m"
    )
    guard = LearntFrom(tuple(await memory.forgotten.of_texts(alice.user_id, [PIN])))
    with pytest.raises(Conflict):
        await memory.store.commit(
            alice.user_id, [Change(again, Action.CREATE, "extractor")], memory.clock(), learnt_from=guard
        )
    assert texts(await memory.list(alice)) == []


async def test_a_memory_takes_only_the_messages_that_say_it_in_whole_words(memory, alice):
    at = memory.clock()
    for n, text in enumerate(["We should steal the plans", "Steam trains are fun", "Instead of tea, coffee"]):
        await memory.store.save_messages(alice, f"c{n}", [Message("user", text)], at)
    tea = await memory.add(alice, "Tea")
    plan = await memory.erasure_plan(alice, tea.id)
    assert [c for c, _ in plan.messages] == ["c2"]
    facts, messages = await memory.about(alice.user_id, "tea")
    assert [f.id for f in facts] == [tea.id] and [c for c, _, _ in messages] == ["c2"]


async def test_an_earlier_receipt_still_checks_out_after_a_related_erasure(llm_memory, scripted_llm, alice):
    """Erasing what replaced an erased memory does not seal the log again (its events' salts were
    erased, not missing): the chain head of the first receipt stays in the log."""
    from tests.helpers import extraction

    berlin = await llm_memory.add(alice, "I live in Berlin")
    scripted_llm.reply_json(extraction("I live in Munich"))
    scripted_llm.reply_json(
        {"decisions": [{"new": 1, "action": "supersede", "target": 1, "reason": "moved from Berlin"}]}
    )
    await llm_memory.remember(Turn.of(alice, ("user", "I moved to Munich."), ("assistant", "Nice.")))
    (munich,) = await llm_memory.list(alice)
    _, first = await llm_memory.purge(alice, berlin.id)
    _, second = await llm_memory.purge(alice, munich.id)
    for receipt in (first, second):
        assert await llm_memory.check_receipt({"body": receipt.body, "signature": receipt.signature}) == []
    assert (await llm_memory.verify_audit(alice.user_id)).ok


async def test_an_erasure_takes_the_problems_that_quote_it_from_the_jobs(llm_memory, scripted_llm, alice):
    from tests.helpers import worker_for

    item = {"text": PIN, "confidence": 0.9, "speaker": "user", "message": 1, "valid_from": "660311 PIN"}
    scripted_llm.reply_json({"facts": [item]})
    job = await llm_memory.submit(Turn.of(alice, ("user", PIN), ("assistant", "Noted.")))
    await worker_for(llm_memory).drain()
    done = await llm_memory.job(alice.user_id, job.id)
    assert "660311" in repr(done.result)  # the model's words, quoted in a problem
    (fact,) = await llm_memory.list(alice)
    _, receipt = await llm_memory.purge(alice, fact.id)
    assert "660311" not in repr(await llm_memory.job(alice.user_id, job.id))
    assert receipt.body["erased"]["counts"]["jobs_scrubbed"] == 1


PORK = "I don't eat pork"
# what an erased text looks like copied back: a trailing zero-width space, typographic quotes and
# dashes, a soft hyphen, a byte order mark, a no-break space, another case
LOOKALIKES = [
    "I don’t eat pork\u200b",
    "I DON’T EAT PORK.",
    "I don\u2019t eat\u00a0pork\ufeff",
    "I don't eat po\u00adrk",
    "I don`t eat pork\u200d!",
    # quotes around it, an emoji or a smiley added, a full stop of another script
    "“I don't eat pork”",
    '"I don\'t eat pork"',
    "«I don't eat pork»",
    "'I don't eat pork'",
    "I don't eat pork 😊",
    "🙂 I don't eat pork ❤️",
    "I don't eat pork :)",
    "I don't eat pork。",
]


async def test_an_erased_text_is_not_learnt_again_when_it_only_looks_different(
    llm_memory, scripted_llm, alice
):
    """The digest is of the text as it shows: copies that differ only in characters that show
    nothing or in the kind of quote are dropped; another text is still learnt."""
    from tests.helpers import extraction

    fact = await llm_memory.add(alice, "I don’t eat pork — ever")
    await llm_memory.purge(alice, fact.id)
    assert await llm_memory.forgotten.dropped(alice.user_id, ["I don't eat pork - ever\u200b"])
    other = await llm_memory.add(alice, PORK)
    await llm_memory.purge(alice, other.id)
    assert await llm_memory.forgotten.dropped(alice.user_id, LOOKALIKES) == set(LOOKALIKES)
    assert await llm_memory.forgotten.dropped(alice.user_id, ["I don't eat beef"]) == set()

    scripted_llm.reply_json(extraction(LOOKALIKES[0], "I don't eat beef"))
    scripted_llm.reply_json({"decisions": []})
    report = await llm_memory.remember(
        Turn.of(alice, ("user", "I don’t eat pork\u200b, nor beef"), ("assistant", "Noted."))
    )
    assert report.forgotten == 1
    assert texts(await llm_memory.list(alice)) == ["I don't eat beef"]


async def test_a_digest_kept_before_the_plain_form_still_matches(memory, alice):
    """An erasure of an earlier version kept the digest of domain.normalise's form (a curly
    apostrophe kept as it was): the text is still dropped; the person writing it again brings
    it back under both digests."""
    import hashlib
    import hmac

    from mnemo.domain import Erasure, normalise

    said = "I don’t eat pork"
    key = (await memory.accounts.secret("erased-texts")).encode()
    old = hmac.new(key, f"text\0{alice.user_id}\0{normalise(said)}".encode(), hashlib.sha256).hexdigest()
    assert old not in await memory.forgotten.of_texts(alice.user_id, [said])
    await memory.store.commit(alice.user_id, [], memory.clock(), erase=Erasure(forget=(old,)))
    assert await memory.forgotten.dropped(alice.user_id, [said, PORK]) == {said}

    await memory.add(alice, said)  # the person's own words
    assert await memory.forgotten.dropped(alice.user_id, [said]) == set()
    assert await memory.store.erased(alice.user_id, [old]) == set()


LONG = (
    "Here is the whole draft of my cover letter. "
    + "I led the migration of our billing system. " * 60
    + "Oh, and I hate coriander, by the way. "
    + "The team shipped on time every quarter. " * 60
)


async def test_a_short_memory_takes_the_messages_not_much_longer_and_offers_the_rest(memory, alice):
    """ "I hate coriander" is said alone in one message and in passing in a 5,000-character one:
    the first goes with the memory, the second is offered (shown where it is, by an excerpt
    around the words) and stays unless the person ticks it; a message the plan takes may be left
    out."""
    assert len(LONG) > 5000
    at = memory.clock()
    await memory.store.save_messages(alice, "short", [Message("user", "I hate coriander!")], at)
    await memory.store.save_messages(
        alice, "letter", [Message("assistant", "Sure."), Message("user", LONG)], at
    )
    [alone] = await memory.messages(alice.user_id, "short")
    [_, letter] = await memory.messages(alice.user_id, "letter")
    spice = await memory.add(alice, SPICE)

    plan = await memory.erasure_plan(alice, spice.id)
    assert [(m.message_id, m.why, m.role, m.excerpt) for m in plan.said] == [
        (alone.id, "says it", "user", "I hate coriander!")
    ]
    [offered] = plan.offered
    assert (offered.conversation_id, offered.message_id, offered.role) == ("letter", letter.id, "user")
    assert offered.characters == len(LONG) and offered.at == at
    assert "I hate coriander" in offered.excerpt and len(offered.excerpt) < 300
    assert offered.excerpt.startswith("…") and offered.excerpt.endswith("…")
    await memory.purge(alice, spice.id)
    assert (await memory.messages(alice.user_id, "letter"))[1].content == LONG
    assert (await memory.messages(alice.user_id, "short"))[0].content == ""

    again = await memory.add(alice, SPICE)  # the person's own words again
    kept = await memory.erasure_plan(alice, again.id, [letter.id])
    assert [m.message_id for m in kept.said] == [letter.id] and kept.offered == ()
    await memory.purge(alice, again.id, message_ids=[letter.id])
    assert (await memory.messages(alice.user_id, "letter"))[1].content == ""

    await memory.store.save_messages(alice, "third", [Message("user", "I hate coriander")], at)
    [third] = await memory.messages(alice.user_id, "third")
    last = await memory.add(alice, SPICE)
    await memory.erase_selection(alice.user_id, [last.id], [], keep={third.id})
    assert (await memory.messages(alice.user_id, "third"))[0].content == "I hate coriander"


async def test_the_same_text_in_another_agents_memory_is_named_and_erased_when_asked(memory, alice):
    """Erasing a memory names the same text active in another of the person's agents' memories:
    it stays (and is recalled there) unless the person asks it to go too."""
    agent = await memory.accounts.create_agent(alice.user_id, "Bank")
    bank = Scope(alice.user_id, agent.id)
    everything = Scope(alice.user_id, all_agents=True)
    fact = await memory.add(alice, PIN)
    elsewhere = await memory.add(bank, PIN)

    plan = await memory.erasure_plan(alice, fact.id)
    assert [f.id for f in plan.facts] == [fact.id] and [f.id for f in plan.elsewhere] == [elsewhere.id]
    await memory.purge(alice, fact.id)
    assert texts(await memory.list(bank)) == [PIN]

    again = await memory.add(alice, PIN)
    plan = await memory.erasure_plan(alice, again.id, other_agents=True)
    assert {f.id for f in plan.facts} == {again.id, elsewhere.id} and plan.elsewhere == ()
    await memory.purge(alice, again.id, other_agents=True)
    assert not [f for f in await memory.list(everything, statuses=None) if "660311" in f.text]
