"""`mnemo users usage`, `mnemo users budget`, and a turn over budget in `mnemo turns`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemo.domain import MAX_TOKEN_BUDGET, Claim, Message, Scope, TokenUsage, next_utc_midnight, utc_day
from tests.cli.test_cli import invoker
from tests.helpers import in_store

pytestmark = pytest.mark.slow  # a store seeded, then a dozen commands


async def seed(memory):
    """The local person spent 120 tokens today, and a turn of theirs waits over budget; Bob
    spent 7 and told one call without a count."""
    now = datetime.now(UTC)
    me = Scope((await memory.accounts.user("local")).id)
    bob = Scope((await memory.accounts.user("bob")).id)
    await memory.store.add_usage(me.user_id, utc_day(now), TokenUsage(100, 20, calls=2))
    await memory.store.add_usage(bob.user_id, utc_day(now), TokenUsage(5, 2, calls=2, unreported=1))
    job = await memory.store.enqueue_turn(me, "c1", [Message("user", "I live in Lisbon")], now)
    claimed = await memory.store.claim_job("cli-test", now + timedelta(seconds=1), timedelta(minutes=1))
    assert claimed is not None and claimed.id == job.id
    await memory.store.defer_job(Claim(job.id, "cli-test"), next_utc_midnight(now))
    return job.id, next_utc_midnight(now)


def test_usage_budgets_and_turns_over_budget(tmp_path: Path, embedder, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    waiting, midnight = in_store(data_dir, embedder, seed, database_url)
    mnemo = invoker(data_dir, database_url)

    def answer(*args: str) -> str:
        done = mnemo(*args)
        assert done.exit_code == 0, done.output
        return done.stdout

    listed = json.loads(answer("turns", "list", "--json"))
    assert [(t["id"], t["state"]) for t in listed] == [(waiting, "over_budget")]
    assert listed[0]["learn_at"] == midnight.isoformat().replace("+00:00", "Z")
    assert f"over_budget until {midnight:%Y-%m-%d %H:%M}" in answer("turns", "list")
    assert f"state     over_budget until {midnight:%Y-%m-%d %H:%M}" in answer("turns", "show", waiting)

    rows = {u["name"]: u for u in json.loads(answer("users", "usage", "--json"))}
    assert (rows["local"]["today_tokens"], rows["local"]["daily_token_budget"]) == (120, None)
    assert (rows["bob"]["today_tokens"], rows["bob"]["unreported_calls"]) == (7, 1)
    table = answer("users", "usage")
    assert "local" in table and "120" in table and "bob" in table

    assert answer("users", "budget", "bob", "500") == "bob: 500 tokens a day (their own); 7 spent today.\n"
    set_to = json.loads(answer("users", "budget", "bob", "0", "--json"))
    assert (set_to["daily_token_budget"], set_to["left_today"]) == (0, 0)
    assert "(own)" in answer("users", "usage")
    cleared = json.loads(answer("users", "budget", "bob", "--default", "--json"))
    assert (cleared["daily_token_budget"], cleared["own_budget"]) == (None, None)

    for bad in (
        ["bob", "-1"],
        ["bob", str(MAX_TOKEN_BUDGET + 1)],
        ["bob", "1.5"],
        ["bob", "5", "--default"],
        ["bob"],
    ):
        refused = mnemo("users", "budget", *bad)
        assert refused.exit_code == 2 and "Traceback" not in refused.output, (bad, refused.output)
    assert json.loads(answer("users", "usage", "--json"))[0]["own_budget"] is None
    missing = mnemo("users", "budget", "nobody", "10")
    assert missing.exit_code == 1 and "nobody" in missing.stderr
