"""The chat model's tokens spent on learning: counted per turn and per person per UTC day as the
upstream reported them, and a daily budget that defers a person's turns to the next UTC day,
in order, without touching anyone else's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.domain import MAX_TOKEN_BUDGET, InvalidInput, JobStatus, NotFound, TokenUsage, TurnState, new_id
from mnemo.settings import Settings, WriteSettings
from tests.core.test_jobs import turn, worker
from tests.helpers import backfill_for, decisions, extraction, texts

MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)  # the clock fixture's next UTC midnight


def reported(scripted_llm, first: int = 0) -> TokenUsage:
    """What the upstream reported for its replies from the `first` on."""
    sent = scripted_llm.usages[first:]
    return TokenUsage(
        sum(u["prompt_tokens"] for u in sent), sum(u["completion_tokens"] for u in sent), calls=len(sent)
    )


async def learn(memory, scripted_llm, scope, clock, said: str, fact: str):
    scripted_llm.reply_json(extraction(fact))
    job = await memory.submit(turn(scope, said))
    await worker(memory, clock).drain()
    return await memory.turn(scope.user_id, job.id)


async def test_each_turn_and_the_day_count_the_tokens_the_upstream_reported(
    llm_memory, scripted_llm, alice, bob, clock
):
    first = await learn(
        llm_memory, scripted_llm, alice, clock, "I have a cat named Miso", "I have a cat named Miso"
    )
    one = reported(scripted_llm)
    assert one.total > 0 and one.calls == 1
    job = await llm_memory.job(alice.user_id, first.id)
    assert job.result["tokens"] == one.summary()
    # the second turn touches the first fact: extraction and reconciliation, two calls
    scripted_llm.reply_json(extraction("My cat Miso is twelve years old"))
    scripted_llm.reply_json(decisions(("My cat Miso is twelve years old", "add", None)))
    second = await llm_memory.submit(turn(alice, "My cat Miso is twelve years old"))
    await worker(llm_memory, clock).drain()
    two = reported(scripted_llm, 1)
    assert two.calls == 2
    assert (await llm_memory.job(alice.user_id, second.id)).result["tokens"] == two.summary()
    usage = await llm_memory.accounts.usage(alice.user_id)
    assert usage.today.day == clock.now.date() and usage.today.usage == one + two
    assert len(usage.days) == 30 and all(d.usage == TokenUsage() for d in usage.days[1:])
    assert usage.budget is None and usage.left is None
    # one person's tokens are theirs only
    assert (await llm_memory.accounts.usage(bob.user_id)).today.usage == TokenUsage()


async def test_a_reply_without_usage_counts_as_an_unreported_call_not_as_zero_tokens(
    llm_memory, scripted_llm, alice, clock
):
    scripted_llm.send_usage = False
    await llm_memory.accounts.set_token_budget(alice.user_id, 1)
    learnt = await learn(llm_memory, scripted_llm, alice, clock, "I live in Lisbon", "I live in Lisbon")
    assert learnt.state == "learnt"
    job = await llm_memory.job(alice.user_id, learnt.id)
    assert job.result["tokens"] == {
        "prompt": 0,
        "completion": 0,
        "total": 0,
        "calls": 1,
        "unreported_calls": 1,
    }
    today = (await llm_memory.accounts.usage(alice.user_id)).today.usage
    assert today == TokenUsage(calls=1, unreported=1)
    # unknown tokens do not spend the budget: the next turn is learnt too
    again = await learn(llm_memory, scripted_llm, alice, clock, "I have a dog", "I have a dog")
    assert again.state == "learnt"


async def test_the_turn_that_crosses_the_budget_is_learnt_and_the_next_wait_for_the_next_day_in_order(
    llm_memory, scripted_llm, alice, bob, clock
):
    await llm_memory.accounts.set_token_budget(alice.user_id, 1)
    crossing = await learn(
        llm_memory, scripted_llm, alice, clock, "I have a cat named Miso", "I have a cat named Miso"
    )
    assert crossing.state == "learnt"
    spent = (await llm_memory.accounts.usage(alice.user_id)).today.usage.total
    assert spent > 1
    calls = len(scripted_llm.usages)
    waiting = [
        await llm_memory.submit(turn(alice, said)) for said in ("I live in Lisbon", "I play the cello")
    ]
    await worker(llm_memory, clock).drain()
    assert len(scripted_llm.usages) == calls  # the model was not asked
    for job in waiting:
        stored = await llm_memory.turn(alice.user_id, job.id)
        assert (stored.state, stored.learn_at, stored.attempts) == ("over_budget", MIDNIGHT, 0)
    assert [t.id for t in await llm_memory.turns(alice.user_id, state=TurnState.OVER_BUDGET)] == [
        j.id for j in reversed(waiting)
    ]
    usage = await llm_memory.accounts.usage(alice.user_id)
    assert (usage.budget, usage.own_budget, usage.left) == (1, 1, 0)

    # the same server keeps learning for another person
    other = await learn(llm_memory, scripted_llm, bob, clock, "I have a dog", "I have a dog")
    assert other.state == "learnt"

    # a second before midnight they still wait; at midnight the first is learnt, and crosses
    # the new day's budget: the second waits for the midnight after
    clock.now = MIDNIGHT - timedelta(seconds=1)
    assert await worker(llm_memory, clock).drain() == 0
    clock.now = MIDNIGHT
    scripted_llm.reply_json(extraction("I live in Lisbon"))
    asked = len(scripted_llm.chat_requests())
    await worker(llm_memory, clock).drain()
    lisbon, cello = [await llm_memory.turn(alice.user_id, j.id) for j in waiting]
    assert (lisbon.state, lisbon.learn_at, lisbon.attempts) == ("learnt", None, 1)
    assert (cello.state, cello.learn_at) == ("over_budget", MIDNIGHT + timedelta(days=1))
    clock.now = MIDNIGHT + timedelta(days=1, minutes=1)
    scripted_llm.reply_json(extraction("I play the cello"))
    await worker(llm_memory, clock).drain()
    assert (await llm_memory.turn(alice.user_id, cello.id)).state == "learnt"
    prompts = [str(r["messages"]) for r in scripted_llm.chat_requests()[asked:]]
    assert len(prompts) == 2 and "Lisbon" in prompts[0] and "cello" in prompts[1]
    assert sorted(texts(await llm_memory.list(alice))) == [
        "I have a cat named Miso",
        "I live in Lisbon",
        "I play the cello",
    ]
    # each day counts its own tokens
    days = (await llm_memory.accounts.usage(alice.user_id)).days
    assert [d.day for d in days[:3]] == [MIDNIGHT.date() + timedelta(days=n) for n in (1, 0, -1)]
    assert days[2].usage.total == spent and days[1].usage.total > 0 and days[0].usage.total > 0


async def test_a_turn_submitted_while_over_budget_waits_behind_the_earlier_ones(
    llm_memory, scripted_llm, alice, clock
):
    await llm_memory.accounts.set_token_budget(alice.user_id, 0)
    early = await llm_memory.submit(turn(alice, "I live in Lisbon"))
    await worker(llm_memory, clock).drain()
    clock.advance(hours=1)
    late = await llm_memory.submit(turn(alice, "I play the cello"))
    await worker(llm_memory, clock).drain()
    assert {(await llm_memory.job(alice.user_id, j.id)).status for j in (early, late)} == {
        JobStatus.OVER_BUDGET
    }
    assert scripted_llm.usages == []
    # raising the budget looks at the waiting turns again at once, still in order
    scripted_llm.reply_json(extraction("I live in Lisbon"))
    scripted_llm.reply_json(extraction("I play the cello"))
    usage = await llm_memory.accounts.set_token_budget(alice.user_id, 100_000)
    assert (usage.budget, usage.left) == (100_000, 100_000)
    await worker(llm_memory, clock).drain()
    prompts = [str(r["messages"]) for r in scripted_llm.chat_requests()]
    assert "Lisbon" in prompts[0] and "cello" in prompts[1]
    assert sorted(texts(await llm_memory.list(alice))) == ["I live in Lisbon", "I play the cello"]


class TestTheServersBudget:
    @pytest.fixture
    def settings(self, tmp_path) -> Settings:
        return Settings(data_dir=tmp_path, write=WriteSettings(daily_token_budget=0))

    async def test_it_applies_unless_the_admin_gives_a_person_their_own(
        self, llm_memory, scripted_llm, alice, bob, clock
    ):
        assert (await llm_memory.accounts.usage(alice.user_id)).budget == 0
        await llm_memory.accounts.set_token_budget(bob.user_id, 1_000_000)  # above the default
        held = await llm_memory.submit(turn(alice, "I live in Lisbon"))
        bobs = await learn(llm_memory, scripted_llm, bob, clock, "I have a dog", "I have a dog")
        assert bobs.state == "learnt"
        assert (await llm_memory.turn(alice.user_id, held.id)).state == "over_budget"
        # back to the server's default, and a budget below it for nobody changes a thing
        usage = await llm_memory.accounts.set_token_budget(bob.user_id, None)
        assert (usage.budget, usage.own_budget) == (0, None)


async def test_explicit_requests_without_a_chat_model_cost_nothing_and_never_wait(memory, alice, clock):
    await memory.accounts.set_token_budget(alice.user_id, 0)
    job = await memory.submit(turn(alice, "Remember that I live in Lisbon"))
    await worker(memory, clock).drain()
    assert (await memory.turn(alice.user_id, job.id)).state == "waiting_for_model"
    assert (await memory.accounts.usage(alice.user_id)).today.usage == TokenUsage()


@pytest.mark.parametrize("bad", [-1, MAX_TOKEN_BUDGET + 1])
async def test_a_budget_out_of_range_is_refused_and_changes_nothing(memory, alice, bad):
    await memory.accounts.set_token_budget(alice.user_id, 500)
    with pytest.raises(InvalidInput, match="from 0 to"):
        await memory.accounts.set_token_budget(alice.user_id, bad)
    assert (await memory.accounts.usage(alice.user_id)).own_budget == 500


async def test_a_budget_for_nobody_is_not_found(memory):
    with pytest.raises(NotFound):
        await memory.accounts.set_token_budget(new_id(), 10)


async def test_failed_tries_and_backfill_count_too(llm_memory, scripted_llm, alice, clock):
    scripted_llm.reply("this is not JSON at all")
    job = await llm_memory.submit(turn(alice, "I live in Lisbon"))
    await worker(llm_memory, clock).drain()
    assert (await llm_memory.job(alice.user_id, job.id)).status == JobStatus.FAILED
    failed = reported(scripted_llm)
    assert failed.calls == 1 and (await llm_memory.accounts.usage(alice.user_id)).today.usage == failed
    # a backfill of stored conversations spends the person's tokens as well
    await llm_memory.store.save_messages(alice, "old", turn(alice, "I play the cello").messages, clock.now)
    scripted_llm.reply_json(extraction("I play the cello"))
    backfill = backfill_for(llm_memory)
    await backfill.run(await backfill.new_run(users=["alice"]), apply=True)
    assert (await llm_memory.accounts.usage(alice.user_id)).today.usage == reported(scripted_llm)
    assert reported(scripted_llm).calls >= 2
