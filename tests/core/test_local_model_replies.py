"""What real local models return, through the real client, writer, worker and store: every item
of an extraction reply is either kept (an unknown category becomes `other`, the model's word
kept in the fact's history; numbers as strings read as numbers; extra fields ignored; items
wrapped in a list read as items) or dropped with its reason on the turn and in the worker's log
line, which names the turn and never a word of what was said."""

from __future__ import annotations

import logging

import pytest

from mnemo.domain import Action, Category, JobStatus, Scope, SourceKind, Status, Turn
from tests.helpers import texts, worker_for

SAID = "I see a physiotherapist every week for my knee, and I am saving for a canoe."
KNEE = "I see a physiotherapist every week for my knee"
CANOE = "I am saving for a canoe"
RAMBLE = "I once wrote a very long note about " + "my grandmother's hidden ring " * 30


def turn(scope: Scope) -> Turn:
    return Turn.of(scope, ("user", SAID), ("assistant", "Noted."))


async def learnt(memory, scope: Scope, clock) -> str:
    """The turn submitted and learnt by the job worker: its id."""
    job = await memory.submit(turn(scope))
    await worker_for(memory, clock=clock).drain()
    return job.id


async def test_a_fact_in_a_category_mnemo_does_not_know_is_kept_as_other(
    llm_memory, scripted_llm, alice, clock
):
    scripted_llm.reply_json(
        {
            "facts": [
                {"text": KNEE, "category": "health", "confidence": 0.9, "speaker": "user", "message": 1},
                # what local models do: numbers as strings, a capitalised enum, fields of their own
                {
                    "text": CANOE,
                    "category": "Plan",
                    "confidence": "0.85",
                    "speaker": "User",
                    "message": "1",
                    "importance": "high",
                    "id": 7,
                },
            ]
        }
    )
    turn_id = await learnt(llm_memory, alice, clock)

    stored = await llm_memory.turn(alice.user_id, turn_id)
    assert stored.state == "learnt" and stored.dropped == {}
    facts = {f.text: f for f in await llm_memory.list(alice)}
    assert sorted(facts) == sorted([KNEE, CANOE]) and sorted(stored.facts["created"]) == sorted(
        f.id for f in facts.values()
    )
    knee, canoe = facts[KNEE], facts[CANOE]
    assert knee.category == Category.OTHER and knee.status == Status.ACTIVE
    assert knee.source.kind == SourceKind.USER_MESSAGE and knee.confidence == 0.9
    [created] = await llm_memory.history(alice, knee.id)
    assert created.action == Action.CREATE and "'health'" in (created.reason or "")
    assert canoe.category == Category.PLAN and canoe.confidence == 0.85
    assert canoe.source.kind == SourceKind.USER_MESSAGE and canoe.source.message_ids


async def test_an_item_that_cannot_be_a_fact_is_dropped_with_its_reason_on_the_turn(
    llm_memory, scripted_llm, alice, clock
):
    scripted_llm.reply_json(
        {
            "facts": [
                [
                    {"text": CANOE, "category": "plan", "speaker": "user", "message": 1}
                ],  # a list, not an object
                {"category": "health", "confidence": 1},  # no text
                {"text": RAMBLE, "speaker": "user", "message": 1},
                "I like knees",
                {"text": KNEE, "category": "wellbeing", "speaker": "human", "message": 1},
            ]
        }
    )
    turn_id = await learnt(llm_memory, alice, clock)

    stored = await llm_memory.turn(alice.user_id, turn_id)
    assert stored.state == "learnt"
    assert stored.dropped == {
        "no text": 1,
        "text is longer than 500 characters": 1,
        "not an object": 1,
    }
    assert texts(await llm_memory.list(alice)) == [CANOE]
    # an unknown speaker is not the person's word: kept, and held for their review
    [held] = await llm_memory.list(alice, statuses=[Status.CANDIDATE])
    assert held.text == KNEE and held.category == Category.OTHER and stored.facts["held"] == [held.id]
    job = await llm_memory.job(alice.user_id, turn_id)
    assert job.status == JobStatus.DONE and "grandmother" not in repr(job.result["dropped"])


async def test_the_worker_log_line_names_the_turn_and_the_drops_never_the_text(
    llm_memory, scripted_llm, alice, clock, caplog
):
    caplog.set_level(logging.INFO, logger="mnemo")
    scripted_llm.reply_json(
        {"facts": [{"text": RAMBLE, "message": 1}, {"text": "", "message": 1}, {"text": KNEE, "message": 1}]}
    )
    turn_id = await learnt(llm_memory, alice, clock)

    [fact] = await llm_memory.list(alice)
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    [finished] = [line for line in lines if line.startswith(f"turn {turn_id} learnt")]
    assert finished.endswith(
        f" [{fact.id}]; dropped 2: no text (1), text is longer than 500 characters (1)"
    ), finished
    warned = [line for line in lines if "problem(s)" in line]
    assert warned and all(turn_id in line for line in warned)
    for words in ("grandmother", "hidden", "physiotherapist", "knee", "canoe"):
        assert words not in caplog.text.lower()


@pytest.mark.parametrize(
    ("item", "category", "confidence", "from_user"),
    [
        ({"category": "HEALTH"}, Category.OTHER, 0.95, True),
        ({"category": 7}, Category.OTHER, 0.95, True),
        ({"category": None}, Category.OTHER, 0.95, True),
        ({"category": " preference "}, Category.PREFERENCE, 0.95, True),
        ({"confidence": "very"}, Category.OTHER, 0.8, True),
        ({"confidence": 1.5}, Category.OTHER, 1.0, True),
        ({"confidence": "0.3"}, Category.OTHER, 0.3, True),
        ({"confidence": None}, Category.OTHER, 0.8, True),
        ({"message": 1.0}, Category.OTHER, 0.95, True),
        ({"message": "first"}, Category.OTHER, 0.4, False),
        ({"message": [1]}, Category.OTHER, 0.4, False),
        ({"speaker": "system"}, Category.OTHER, 0.4, False),
        ({"speaker": None}, Category.OTHER, 0.95, True),
        ({"valid_from": 20260101}, Category.OTHER, 0.95, True),
        ({"unknown": {"nested": [1]}, "tags": ["a"]}, Category.OTHER, 0.95, True),
    ],
)
async def test_a_field_that_cannot_be_read_is_left_to_its_default_and_the_fact_kept(
    llm_memory, scripted_llm, alice, item, category, confidence, from_user
):
    fact = {"text": KNEE, "category": "other", "confidence": 0.95, "speaker": "user", "message": 1}
    scripted_llm.reply_json({"facts": [fact | item]})
    report = await llm_memory.remember(turn(alice))
    [kept] = await llm_memory.list(alice, statuses=[Status.ACTIVE, Status.CANDIDATE])
    assert kept.text == KNEE and kept.category == category and kept.confidence == confidence
    assert (kept.source.kind == SourceKind.USER_MESSAGE) == from_user
    assert kept.status == (Status.ACTIVE if from_user else Status.CANDIDATE)
    assert report.dropped == {}
