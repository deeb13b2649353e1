"""Review policies, per-turn limits, pinned facts, and reinforcement instead of duplicates."""

from __future__ import annotations

import pytest

from mnemo.domain import Action, ReviewPolicy, Scope, Status, Turn
from tests.helpers import decisions, extraction, texts


def turn(scope: Scope, said: str) -> Turn:
    return Turn.of(scope, ("user", said), ("assistant", "Noted."))


async def test_review_policy_holds_everything_until_approved(llm_memory, scripted_llm, alice):
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.REVIEW)
    scripted_llm.reply_json(extraction("I have a cat named Miso", "I play the cello"))
    report = await llm_memory.remember(turn(alice, "My cat Miso hates my cello practice."))

    assert len(report.held) == 2
    assert texts(await llm_memory.recall("cat cello", alice)) == []
    queue = await llm_memory.list(alice, statuses=[Status.CANDIDATE])
    assert sorted(texts(queue)) == ["I have a cat named Miso", "I play the cello"]
    cat = next(f for f in queue if "Miso" in f.text)
    cello = next(f for f in queue if "cello" in f.text)
    await llm_memory.approve(alice, cat.id)
    await llm_memory.reject(alice, cello.id)
    assert texts(await llm_memory.recall("cat cello", alice)) == ["I have a cat named Miso"]
    assert (await llm_memory.get(alice, cello.id)).status == Status.REJECTED


async def test_guarded_holds_assistant_claims_and_low_confidence(llm_memory, scripted_llm, alice):
    await llm_memory.accounts.set_review_policy(alice.user_id, ReviewPolicy.GUARDED)
    scripted_llm.reply_json(
        extraction(
            {"text": "I am a software engineer", "speaker": "user", "confidence": 0.95, "message": 1},
            {"text": "I am the administrator", "speaker": "assistant", "confidence": 0.99, "message": 2},
            {"text": "I might like jazz", "speaker": "user", "confidence": 0.3, "message": 1},
        )
    )
    report = await llm_memory.remember(
        Turn.of(
            alice,
            ("user", "I'm a software engineer."),
            ("assistant", "As the document says, you are the administrator."),
        )
    )
    assert texts(await llm_memory.list(alice)) == ["I am a software engineer"]
    held = await llm_memory.list(alice, statuses=[Status.CANDIDATE])
    assert sorted(texts(held)) == ["I am the administrator", "I might like jazz"]
    admin = next(f for f in held if "administrator" in f.text)
    assert admin.source.speaker == "assistant"
    assert len(report.held) == 2


async def test_per_turn_limit_stops_a_mass_rewrite(llm_memory, scripted_llm, alice):
    hobbies = ["I play chess", "I play tennis", "I play the piano", "I play golf", "I play poker"]
    for h in hobbies:
        await llm_memory.add(alice, h)
    scripted_llm.reply_json(extraction(*[f"{h} no more" for h in hobbies]))
    scripted_llm.reply_json(decisions(*[(i, "retract", i) for i in range(1, 6)]))
    report = await llm_memory.remember(turn(alice, "Forget everything about me: I quit all my hobbies."))

    limit = llm_memory.settings.write.max_changes_to_existing
    assert report.count(Action.RETRACT) == limit
    assert len(await llm_memory.list(alice, statuses=[Status.CANDIDATE])) == len(hobbies) - limit
    assert len(await llm_memory.list(alice)) == len(hobbies) - limit


async def test_pinned_facts_are_never_changed_by_the_extractor(llm_memory, scripted_llm, alice):
    pinned = await llm_memory.add(alice, "My name is Alice Moreau", pinned=True)
    scripted_llm.reply_json(extraction("My name is Bob"))
    scripted_llm.reply_json(decisions((1, "supersede", 1)))
    await llm_memory.remember(turn(alice, "My name is now Bob."))

    assert (await llm_memory.get(alice, pinned.id)).status == Status.ACTIVE
    candidate = (await llm_memory.list(alice, statuses=[Status.CANDIDATE]))[0]
    assert candidate.text == "My name is Bob" and candidate.supersedes == pinned.id
    # approving the held replacement performs the supersede
    await llm_memory.approve(alice, candidate.id)
    assert (await llm_memory.get(alice, pinned.id)).status == Status.SUPERSEDED


async def test_restating_a_fact_reinforces_it(memory, alice, clock):
    await memory.remember(turn(alice, "Remember that I live in Lisbon."))
    clock.advance(days=3)
    report = await memory.remember(turn(alice, "Please remember that I live in Lisbon!"))

    facts = await memory.list(alice)
    assert texts(facts) == ["I live in Lisbon"]
    assert facts[0].mentions == 2 and facts[0].last_seen_at == clock.now
    assert report.count(Action.REINFORCE) == 1


async def test_a_near_duplicate_reinforces(memory, alice):
    await memory.add(alice, "I drink coffee every morning")
    report = await memory.remember(turn(alice, "Remember that I drink a coffee every morning"))
    assert texts(await memory.list(alice)) == ["I drink coffee every morning"]
    assert report.count(Action.REINFORCE) == 1


async def test_a_different_fact_with_a_similar_embedding_is_not_merged(memory, alice):
    await memory.add(alice, "My favourite colour is blue")
    await memory.remember(turn(alice, "Remember that my favourite colour is green"))
    assert sorted(texts(await memory.list(alice))) == [
        "My favourite colour is blue",
        "My favourite colour is green",
    ]


async def test_adding_the_same_text_twice_keeps_one_row(memory, alice):
    first = await memory.add(alice, "I am vegetarian")
    again = await memory.add(alice, "  i am VEGETARIAN. ")
    assert again.id == first.id and again.mentions == 2
    assert texts(await memory.list(alice)) == ["I am vegetarian"]


async def test_noop_and_update_decisions(llm_memory, scripted_llm, alice):
    job = await llm_memory.add(alice, "I work at Acme as an engineer")
    created = job.created_at
    scripted_llm.reply_json(extraction("I work at Acme as a senior engineer"))
    scripted_llm.reply_json(decisions((1, "update", 1)))
    await llm_memory.remember(turn(alice, "Actually I'm a senior engineer at Acme."))

    now = await llm_memory.get(alice, job.id)
    assert now.text == "I work at Acme as a senior engineer" and now.version == 2
    assert now.created_at == created
    history = await llm_memory.history(alice, job.id)
    assert [e.action for e in history] == [Action.CREATE, Action.EDIT]
    assert history[1].before["text"] == "I work at Acme as an engineer"


async def test_close_embeddings_with_different_numbers_are_not_merged(memory, alice):
    await memory.add(alice, "My flight to Oslo is on May 3")
    await memory.remember(turn(alice, "Remember that my flight to Oslo is on May 4"))
    assert sorted(texts(await memory.list(alice))) == [
        "My flight to Oslo is on May 3",
        "My flight to Oslo is on May 4",
    ]


@pytest.mark.parametrize(("target", "reinforced"), [(1, 1), (7, 0)], ids=["known", "unknown"])
async def test_a_noop_reinforces_the_fact_it_names_if_known(
    llm_memory, scripted_llm, alice, target, reinforced
):
    kids = await llm_memory.add(alice, "I have two kids")
    scripted_llm.reply_json(extraction("I have two children"))
    scripted_llm.reply_json({"decisions": [{"new": 1, "action": "noop", "target": target}]})
    report = await llm_memory.remember(turn(alice, "My two children are at school."))

    # nothing new either way: never added as a fact the model left without a decision
    assert texts(await llm_memory.list(alice)) == ["I have two kids"]
    assert report.count(Action.REINFORCE) == reinforced == len(report.events)
    assert report.problems == []
    assert (await llm_memory.get(alice, kids.id)).mentions == 1 + reinforced


async def test_a_change_to_a_fact_retracted_in_the_same_turn_is_skipped_and_said(
    llm_memory, scripted_llm, alice
):
    await llm_memory.add(alice, "I live in Lisbon")
    scripted_llm.reply_json(extraction("I no longer live in Lisbon", "I live in the old town of Lisbon"))
    scripted_llm.reply_json(decisions((1, "retract", 1), (2, "update", 1)))
    report = await llm_memory.remember(turn(alice, "I left Lisbon. Well, I lived in its old town."))

    assert [e.action for e in report.events] == [Action.RETRACT]
    assert report.problems == [
        "update of 'I live in the old town of Lisbon' skipped: cannot edit a memory that is retracted"
    ]
