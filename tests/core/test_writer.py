"""The writer against a scripted model: correction across the whole store, and bad output."""

from __future__ import annotations

import json

import pytest

from mnemo.domain import Action, Scope, Status, Turn
from mnemo.providers.chat import OpenAIChatModel
from mnemo.write import extract_prompt
from tests.helpers import bulk_add, decisions, extraction, texts, unrelated_facts


def turn(scope: Scope, said: str) -> Turn:
    return Turn.of(scope, ("user", said), ("assistant", "Got it."))


def reconcile_prompt(scripted_llm) -> str:
    """The user message of the last reconciliation request the model received."""
    requests = [
        r for r in scripted_llm.chat_requests() if "reconciliation" in json.dumps(r.get("response_format"))
    ]
    return requests[-1]["messages"][-1]["content"]


@pytest.mark.slow
async def test_old_fact_outside_recall_is_superseded(llm_memory, clock, scripted_llm):
    """Khoj's central limit, fixed: the corrector searches the whole store, not recall's output."""
    alice = Scope((await llm_memory.accounts.user("alice")).id)
    berlin = await llm_memory.add(alice, "I live in Berlin")
    clock.advance(days=400)
    await bulk_add(llm_memory, alice, unrelated_facts(1000))
    clock.advance(hours=1)
    # What Khoj would have shown the corrector this turn: the recent facts and
    # the nearest ones. Berlin, a year old, is not among the recent ones.
    recent = await llm_memory.recall("I moved to Munich last month", alice, arms=("recency",))
    assert "I live in Berlin" not in texts(recent)

    scripted_llm.reply_json(extraction("I live in Munich"))
    scripted_llm.reply_json(decisions((1, "supersede", 1)))
    report = await llm_memory.remember(turn(alice, "I moved to Munich last month."))

    assert report.problems == []
    assert "1. I live in Berlin" in reconcile_prompt(scripted_llm)
    assert berlin.id not in reconcile_prompt(scripted_llm)  # aliases, never ids
    hits = texts(await llm_memory.recall("where do I live?", alice))
    assert "I live in Munich" in hits and "I live in Berlin" not in hits
    old = await llm_memory.get(alice, berlin.id)
    assert old.status == Status.SUPERSEDED and old.valid_to is not None
    new = await llm_memory.get(alice, old.superseded_by)
    assert new.text == "I live in Munich" and new.supersedes == berlin.id
    assert [e.action for e in await llm_memory.history(alice, berlin.id)] == [Action.CREATE, Action.SUPERSEDE]
    assert new.source.extractor_model == "scripted-model" and new.source.prompt_version


MOVED = {"text": "I moved to Geneva last month", "confidence": 0.95, "speaker": "user", "message": 1}


@pytest.mark.parametrize(
    ("without", "given", "floor"),
    [
        ({}, {"topic": "Where do I live?"}, "topic_floor"),
        (
            {"topic": "What changed last month?"},
            {"topic": "What changed last month?", "replaces": "I live in some city"},
            "replaces_floor",
        ),
    ],
    ids=["topic question", "generic form"],
)
async def test_a_search_aid_finds_a_fact_the_new_wording_does_not(
    llm_memory, scripted_llm, settings, alice, bob, without, given, floor
):
    """The new wording "I moved to Geneva" embeds near Geneva, not near "I live in Aarhus": the
    extractor's topic question ("Where do I live?") puts the old fact in front of the reconciler;
    so does the generic form of the fact it replaces ("I live in some city"), where a topic
    question ("What changed last month?") does not. Three people with the same memories: without
    the aid, nothing related is found; with it, the old fact is superseded; with the aid's own
    floor above any likeness, nothing is found again."""
    carol = Scope((await llm_memory.accounts.user("carol")).id)
    aarhus = {}
    for person in (alice, bob, carol):
        aarhus[person] = await llm_memory.add(person, "I live in Aarhus")
        await bulk_add(llm_memory, person, unrelated_facts(300))

    async def moved(person: Scope, aids: dict, requests: int) -> None:
        """A turn that finds nothing related: the new fact added alone, with no reconciliation."""
        scripted_llm.reply_json(extraction(MOVED | aids))
        report = await llm_memory.remember(turn(person, "I moved to Geneva last month."))
        assert len(scripted_llm.chat_requests()) == requests
        assert report.count(Action.CREATE) == 1 and report.problems == []
        assert (await llm_memory.get(person, aarhus[person].id)).status == Status.ACTIVE

    await moved(alice, without, requests=1)

    scripted_llm.reply_json(extraction(MOVED | given))
    scripted_llm.reply_json(decisions((1, "supersede", 1)))
    report = await llm_memory.remember(turn(bob, "I moved to Geneva last month."))
    assert report.problems == []
    assert "1. I live in Aarhus" in reconcile_prompt(scripted_llm)
    old = await llm_memory.get(bob, aarhus[bob].id)
    assert old.status == Status.SUPERSEDED
    assert (await llm_memory.get(bob, old.superseded_by)).text == "I moved to Geneva last month"

    setattr(settings.write, floor, 0.99)
    await moved(carol, given, requests=4)


async def test_an_unusable_topic_is_dropped_and_the_fact_kept(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(
        extraction(
            {"text": "I own a kayak", "topic": 42, "message": 1},
            {"text": "I play the cello", "topic": {"nested": ["x"]}, "message": 1},
            {"text": "I keep bees", "topic": "Do I keep bees?" + "?" * 5000, "message": 1},
            {"text": "I grow tomatoes", "topic": "   ", "message": 1},
        )
    )
    report = await llm_memory.remember(turn(alice, "Kayak, cello, bees and tomatoes."))
    assert report.problems == []
    assert sorted(texts(await llm_memory.list(alice))) == [
        "I grow tomatoes",
        "I keep bees",
        "I own a kayak",
        "I play the cello",
    ]


async def test_non_json_reply_is_reported_not_raised(llm_memory, scripted_llm, alice):
    scripted_llm.reply("I could not find any facts, sorry!")
    report = await llm_memory.remember(turn(alice, "I have a cat named Miso."))
    assert report.events == [] and not report.retry
    assert any("no JSON" in p for p in report.problems)


async def test_json_inside_prose_is_read(llm_memory, scripted_llm, alice):
    scripted_llm.reply(
        'Sure! Here you go:\n```json\n{"facts": [{"text": "I have a cat named Miso", "message": 1}]}'
        "\n```\nDone."
    )
    await llm_memory.remember(turn(alice, "I have a cat named Miso."))
    assert texts(await llm_memory.list(alice)) == ["I have a cat named Miso"]


async def test_wrong_types_drop_only_the_bad_items(llm_memory, scripted_llm, alice):
    """An item with no usable text is dropped; one whose other field is unreadable is kept."""
    scripted_llm.reply_json(
        {
            "facts": [
                {"text": 5},
                {"text": "I own a kayak", "confidence": "very", "message": 1},
                {"text": "I play the cello", "message": 1},
                "x",
            ]
        }
    )
    report = await llm_memory.remember(turn(alice, "I play the cello and own a kayak."))
    assert sorted(texts(await llm_memory.list(alice))) == ["I own a kayak", "I play the cello"]
    assert len([p for p in report.problems if "dropped" in p]) == 2
    assert report.dropped == {"text is not a string": 1, "not an object": 1}
    assert any("confidence could not be read" in p for p in report.problems)


async def test_empty_reply_is_reported(llm_memory, scripted_llm, alice):
    scripted_llm.reply("")
    report = await llm_memory.remember(turn(alice, "I have a cat."))
    assert report.events == [] and any("empty" in p for p in report.problems)


async def test_a_huge_create_list_is_capped(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(extraction(*[f"I have visited country number {i}" for i in range(1000)]))
    report = await llm_memory.remember(turn(alice, "I have been everywhere."))
    limit = llm_memory.settings.write.max_new_facts
    assert len(await llm_memory.list(alice, limit=2000)) == limit
    assert any("over the limit" in p for p in report.problems)


async def seed_two(memory, scope):
    berlin = await memory.add(scope, "I live in Berlin")
    nurse = await memory.add(scope, "I work as a nurse")
    return berlin, nurse


async def test_bad_references_are_dropped_and_the_rest_applied(llm_memory, scripted_llm, alice):
    berlin, nurse = await seed_two(llm_memory, alice)
    scripted_llm.reply_json(extraction("I live in Munich", "I work as a doctor"))
    scripted_llm.reply_json(decisions((1, "supersede", 1), (2, "supersede", 7)))
    report = await llm_memory.remember(turn(alice, "I moved to Munich and I am a doctor now."))

    prompt = reconcile_prompt(scripted_llm)
    assert "1. I live in Berlin" in prompt and "2. I work as a nurse" in prompt
    assert (await llm_memory.get(alice, berlin.id)).status == Status.SUPERSEDED
    assert (await llm_memory.get(alice, nurse.id)).status == Status.ACTIVE
    active = texts(await llm_memory.list(alice))
    assert sorted(active) == ["I live in Munich", "I work as a doctor", "I work as a nurse"]
    assert any("unknown fact 7" in p for p in report.problems)


async def test_out_of_range_aliases_raw_ids_and_unknown_new_facts(llm_memory, scripted_llm, alice):
    berlin, nurse = await seed_two(llm_memory, alice)
    scripted_llm.reply_json(extraction("I live in Munich", "I work as a doctor"))
    scripted_llm.reply_json(
        {
            "decisions": [
                {"new": 1, "action": "retract", "target": 0},
                {"new": 2, "action": "supersede", "target": nurse.id},
                {"new": 9, "action": "retract", "target": 1},
                {"new": 1, "action": "update", "target": -3},
            ]
        }
    )
    report = await llm_memory.remember(turn(alice, "I moved to Munich and I am a doctor now."))

    assert (await llm_memory.get(alice, berlin.id)).status == Status.ACTIVE
    assert (await llm_memory.get(alice, nurse.id)).status == Status.ACTIVE
    # both new facts are kept rather than lost
    assert "I live in Munich" in texts(await llm_memory.list(alice))
    assert "I work as a doctor" in texts(await llm_memory.list(alice))
    assert len(report.problems) >= 4


async def test_another_users_fact_cannot_be_touched(llm_memory, scripted_llm, alice):
    bob = Scope((await llm_memory.accounts.user("bob")).id)
    bobs = await llm_memory.add(bob, "I live in Berlin")
    await llm_memory.add(alice, "I live in Berlin")
    scripted_llm.reply_json(extraction("I live in Munich"))
    scripted_llm.reply_json({"decisions": [{"new": 1, "action": "retract", "target": bobs.id}]})
    await llm_memory.remember(turn(alice, "I moved to Munich."))

    assert bobs.id not in json.dumps(scripted_llm.chat_requests())
    bobs_now = await llm_memory.get(bob, bobs.id)
    assert bobs_now.status == Status.ACTIVE and bobs_now.text == "I live in Berlin"
    assert texts(await llm_memory.list(bob)) == ["I live in Berlin"]


@pytest.mark.slow
async def test_a_timeout_is_reported_for_retry(store, embedder, settings, clock, scripted_llm, alice):
    from mnemo.memory import Memory

    chat = OpenAIChatModel(scripted_llm.base_url, "k", "scripted-model", timeout=0.3, max_retries=0)
    memory = Memory(store, embedder, chat, settings=settings, clock=clock)
    scripted_llm.stall(2.0, json.dumps(extraction("I have a cat")))
    report = await memory.remember(turn(alice, "I have a cat."))
    await chat.aclose()
    assert report.retry and report.events == []
    assert any("did not answer" in p for p in report.problems)


async def test_the_extractor_sees_the_last_two_exchanges(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(extraction())
    messages = [("user", f"message {i}") if i % 2 == 0 else ("assistant", f"reply {i}") for i in range(8)]
    await llm_memory.remember(Turn.of(alice, *messages))
    prompt = scripted_llm.chat_requests()[0]["messages"][-1]["content"]
    assert "message 4" in prompt and "reply 7" in prompt and "message 2" not in prompt
    request = scripted_llm.chat_requests()[0]
    assert request["response_format"]["type"] == "json_schema"


async def test_message_provenance_is_recorded(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(extraction({"text": "I have a cat named Miso", "speaker": "user", "message": 1}))
    await llm_memory.remember(
        Turn.of(alice, ("user", "My cat is Miso."), ("assistant", "Cute!"), conversation_id="c-1")
    )
    fact = (await llm_memory.list(alice))[0]
    assert fact.source.conversation_id == "c-1"
    assert fact.source.speaker == "user" and len(fact.source.message_ids) == 1
    assert fact.source.prompt_version == extract_prompt.VERSION


async def test_a_facts_source_messages_are_read_back_for_its_user_only(llm_memory, scripted_llm, alice, bob):
    scripted_llm.reply_json(extraction({"text": "I have a cat named Miso", "speaker": "user", "message": 1}))
    await llm_memory.remember(
        Turn.of(alice, ("user", "My cat is Miso."), ("assistant", "Cute!"), conversation_id="c-1")
    )
    fact = (await llm_memory.list(alice))[0]
    said = await llm_memory.messages(alice.user_id, "c-1", fact.source.message_ids)
    assert [(m.role, m.content) for m in said] == [("user", "My cat is Miso.")]
    whole = await llm_memory.messages(alice.user_id, "c-1")
    assert [(m.role, m.content) for m in whole] == [("user", "My cat is Miso."), ("assistant", "Cute!")]
    assert await llm_memory.messages(bob.user_id, "c-1") == []


async def test_problems_are_logged_without_the_persons_words(llm_memory, scripted_llm, alice, caplog):
    scripted_llm.reply_json({"facts": [{"text": 5}, {"text": "I play the cello"}]})
    with caplog.at_level("WARNING", logger="mnemo.write.writer"):
        await llm_memory.remember(turn(alice, "I play the cello."))
    assert "1 problem(s)" in caplog.text and "cello" not in caplog.text
