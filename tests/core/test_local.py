"""mnemo.open(): the blocking facade over real databases, people by name, and a call from
inside a running event loop (as in Jupyter)."""

from __future__ import annotations

import asyncio
import math

import pytest

import mnemo
from mnemo.domain import InvalidInput, NotFound

pytestmark = pytest.mark.slow


@pytest.fixture
def local(tmp_path, database_url):
    with mnemo.open(tmp_path, database_url=database_url) as m:
        yield m


def test_add_search_forget_erase(local):
    fact = local.add("I live in Porto", user="ana")
    local.add("My sister plays the cello", user="bo")
    hits = local.search("where do I live?", user="ana")
    assert hits[0].text == "I live in Porto" and math.isfinite(hits[0].score)
    assert "My sister plays the cello" not in [h.text for h in local.search("cello", user="ana")]
    with pytest.raises(NotFound):
        local.get(fact.id, user="bo")
    with pytest.raises(NotFound):
        local.forget(fact.id, user="bo")
    assert local.forget(fact.id, user="ana").status == "retracted"
    assert [f.text for f in local.list(user="ana")] == []
    assert local.restore(fact.id, user="ana").status == "active"
    assert [e.action for e in local.history(fact.id, user="ana")] == ["create", "retract", "restore"]
    receipt = local.erase(fact.id, user="ana")
    assert receipt.kind == "memory" and fact.id in receipt.body["erased"]["facts"]
    assert local.get(fact.id, user="ana").text == ""
    assert [f.text for f in local.list(user="bo")] == ["My sister plays the cello"]


def test_learn_takes_explicit_requests_without_a_chat_model(local):
    report = local.learn(
        [
            {"role": "user", "content": "Remember that I have a cat named Miso"},
            {"role": "assistant", "content": "Ok"},
        ],
        user="ana",
    )
    assert report.waiting_for_model and report.facts["created"]
    assert [f.text for f in local.list(user="ana")] == ["I have a cat named Miso"]
    for bad in ([], [{"role": "user"}], ["hello"]):
        with pytest.raises(InvalidInput):
            local.learn(bad, user="ana")
    assert len(local.list(user="ana")) == 1


async def test_it_works_inside_a_running_event_loop(tmp_path, database_url):
    asyncio.get_running_loop()  # as a notebook cell runs
    with mnemo.open(data_dir=tmp_path, database_url=database_url) as m:
        m.add("I live in Porto", user="ana")
        assert m.search("Porto", user="ana")[0].text == "I live in Porto"
    with pytest.raises(RuntimeError, match="closed"):
        m.list(user="ana")


def test_the_same_data_directory_is_opened_again(tmp_path):
    with mnemo.open(tmp_path) as m:
        m.add("I live in Porto", user="ana")
    with mnemo.open(str(tmp_path)) as m:
        assert [f.text for f in m.list(user="ana")] == ["I live in Porto"]
    assert (tmp_path / "mnemo.db").is_file()
