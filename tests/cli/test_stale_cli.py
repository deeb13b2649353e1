"""`mnemo review --stale`, `mnemo keep`, `mnemo end ID now` and `mnemo settings stale`, on both
backends, over memories said months ago."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.domain import Category, Scope, utcnow
from tests.cli.test_cli import Invoke, as_json, ok
from tests.helpers import in_store

pytestmark = pytest.mark.slow  # the CLI, in-process

PLAN = "I plan to learn the cello"
TRIP = "I plan a trip to Japan"


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def mnemo(fresh_mnemo) -> Invoke:
    return fresh_mnemo


def _said_months_ago(data_dir, embedder, database_url, *texts: str) -> None:
    async def seed(memory):
        memory.clock = lambda: utcnow() - timedelta(days=120)
        me = Scope((await memory.accounts.user("local")).id)
        for text in texts:
            await memory.add(me, text, category=Category.PLAN)

    in_store(data_dir, embedder, seed, database_url)


def test_the_stale_list_is_read_kept_ended_and_switched_off(
    mnemo: Invoke, data_dir, embedder, database_url
) -> None:
    ok(mnemo("add", "My name is Alice", "--category", "identity"))
    _said_months_ago(data_dir, embedder, database_url, PLAN, TRIP)
    listed = as_json(mnemo("review", "--stale", "--json"))
    assert sorted(f["text"] for f in listed) == [TRIP, PLAN]
    human = ok(mnemo("review", "--stale")).stdout
    assert "Still true?" in human and PLAN in human
    ids = {f["text"]: f["id"] for f in listed}
    kept = as_json(mnemo("keep", ids[PLAN], "--json"))
    assert (kept["version"], kept["mentions"]) == (2, 1)
    ended = as_json(mnemo("end", ids[TRIP], "now", "--json"))
    assert ended["ended"] is True
    assert "Nothing has gone unheard for long." in ok(mnemo("review", "--stale")).stdout
    refused = mnemo("keep", ids[TRIP])
    assert refused.exit_code != 0 and "has ended" in refused.stderr
    # the switch
    _said_months_ago(data_dir, embedder, database_url, "I plan to sell my car")
    assert as_json(mnemo("settings", "stale", "off", "--json"))["review_stale"] is False
    assert "stale list is off" in ok(mnemo("review", "--stale")).stdout
    assert as_json(mnemo("review", "--stale", "--json")) == []
    assert "stale list" in ok(mnemo("settings", "show")).stdout
    ok(mnemo("settings", "stale", "on"))
    assert [f["text"] for f in as_json(mnemo("review", "--stale", "--json"))] == ["I plan to sell my car"]
