"""Learning reads relative dates against when the words were said, not the server's clock:
the prompt carries the turn's day, and a resolved valid_from lands on the fact."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.domain import Scope, Turn
from tests.helpers import extraction, worker_for

SAID = datetime(2023, 5, 8, 18, 30, tzinfo=UTC)  # a Monday, years before the test clock


def hiking(scope: Scope) -> Turn:
    return Turn.of(
        scope, ("user", "I went hiking in the Alps last Saturday."), ("assistant", "Lovely!"), at=SAID
    )


def resolved() -> dict:
    return extraction(
        {
            "text": "I went hiking in the Alps on 6 May 2023",
            "confidence": 0.9,
            "valid_from": "2023-05-06",
            "speaker": "user",
            "message": 1,
        }
    )


def extraction_prompt(scripted_llm) -> str:
    return scripted_llm.chat_requests()[-1]["messages"][-1]["content"]


async def test_a_turn_learnt_now_is_read_against_its_own_day(llm_memory, scripted_llm, alice, clock):
    assert clock() > SAID
    scripted_llm.reply_json(resolved())
    report = await llm_memory.remember(hiking(alice))
    assert not report.problems
    prompt = extraction_prompt(scripted_llm)
    assert prompt.startswith("Today is Monday, 8 May 2023 (2023-05-08).")
    assert f"{clock():%Y-%m-%d}" not in prompt
    system = scripted_llm.chat_requests()[-1]["messages"][0]["content"]
    assert "last Saturday" in system and "reckoned from that date" in system
    [fact] = await llm_memory.list(alice)
    assert fact.text == "I went hiking in the Alps on 6 May 2023"
    assert fact.valid_from == datetime(2023, 5, 6, tzinfo=UTC)
    assert fact.created_at == SAID  # the time it was said


async def test_a_queued_turn_is_read_against_its_day_not_the_workers(llm_memory, scripted_llm, alice, clock):
    await llm_memory.submit(hiking(alice))
    clock.advance(days=3)  # the worker runs later
    scripted_llm.reply_json(resolved())
    await worker_for(llm_memory, clock=clock).run_once()
    assert extraction_prompt(scripted_llm).startswith("Today is Monday, 8 May 2023 (2023-05-08).")
    [fact] = await llm_memory.list(alice)
    assert fact.valid_from == datetime(2023, 5, 6, tzinfo=UTC)


async def test_a_day_before_the_year_1000_is_written_in_full(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(extraction())
    old = Turn.of(alice, ("user", "I sailed to Iceland yesterday."), at=datetime(874, 6, 2, tzinfo=UTC))
    await llm_memory.remember(old)
    assert extraction_prompt(scripted_llm).startswith("Today is Saturday, 2 June 874 (0874-06-02).")


async def test_an_unreadable_valid_from_is_reported_and_the_fact_kept(llm_memory, scripted_llm, alice):
    scripted_llm.reply_json(
        extraction({"text": "I went hiking last Saturday", "valid_from": "last Saturday", "message": 1})
    )
    report = await llm_memory.remember(hiking(alice))
    assert any("unreadable valid_from" in p for p in report.problems)
    [fact] = await llm_memory.list(alice)
    assert fact.text == "I went hiking last Saturday" and fact.valid_from is None
