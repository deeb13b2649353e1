"""The recall log through the server: a proxied turn records what its agent was given; the
person's own look records nothing; nobody else reads or switches it."""

from __future__ import annotations

import pytest

from tests.helpers import raw_sql
from tests.server.test_chat_agents import ask
from tests.server.test_chat_support import ai, view  # noqa: F401

pytestmark = pytest.mark.slow  # a real server


def _recorded(view, client, fact_id: str) -> list[tuple]:  # noqa: F811
    """The log as stored, once the server wrote what waited (a recall's rows are written after
    the reply; reading a fact's recalls writes the person's first)."""
    assert client.get(f"/v1/memories/{fact_id}/recalls").status_code == 200
    rows = "SELECT fact_id, agent_id, via FROM recalls ORDER BY at, fact_id"
    return view.run(raw_sql(view.store, rows))


def test_a_proxied_turn_records_what_its_agent_was_given(ai, view, client, other, scripted_llm):  # noqa: F811
    cook = view.agent("cook")
    peanuts = view.add_fact("I am allergic to peanuts", agent_id=cook.id)
    scripted_llm.default_reply = "ok"
    # the person's own look first: their search and list record nothing
    assert client.get("/v1/memories", params={"q": "peanuts"}).json()["items"]
    assert client.get("/v1/memories").status_code == 200
    assert _recorded(view, client, peanuts.id) == []

    answer = ask(ai, "What about peanuts in my dinner?", extra_headers={"X-Mnemo-Agent": "cook"})

    assert answer.headers["x-mnemo-recalled-ids"] == peanuts.id
    assert _recorded(view, client, peanuts.id) == [(peanuts.id, cook.id, "proxy")]
    shown = client.get(f"/v1/memories/{peanuts.id}/recalls").json()
    assert shown["last"]["agent_id"] == cook.id and shown["last"]["agent_name"] == "cook"
    assert (shown["last"]["via"], shown["count"], shown["recording"], shown["kept_days"]) == (
        "proxy",
        1,
        True,
        30,
    )
    # another person: neither the fact's recalls nor a switch that reaches these rows
    assert other.get(f"/v1/memories/{peanuts.id}/recalls").status_code == 404
    assert other.patch("/v1/me/settings", json={"record_recalls": False}).json()["record_recalls"] is False
    assert _recorded(view, client, peanuts.id) == [(peanuts.id, cook.id, "proxy")]

    ask(ai, "Peanuts again?", extra_headers={"X-Mnemo-Agent": "cook"})
    assert client.get(f"/v1/memories/{peanuts.id}/recalls").json()["count"] == 2
    me = client.patch("/v1/me/settings", json={"record_recalls": False}).json()
    assert me["record_recalls"] is False and me["enable_memory"] is True
    assert _recorded(view, client, peanuts.id) == []
    ask(ai, "Peanuts, a third time?", extra_headers={"X-Mnemo-Agent": "cook"})
    assert _recorded(view, client, peanuts.id) == []
    off = client.get(f"/v1/memories/{peanuts.id}/recalls").json()
    assert (off["last"], off["count"], off["recording"]) == (None, 0, False)


@pytest.mark.parametrize("body", [{"record_recalls": None}, {"record_recalls": "no"}, {"record_recalls": 0}])
def test_the_switch_takes_true_or_false_only(client, body):
    answer = client.patch("/v1/me/settings", json=body)
    assert answer.status_code == 422, answer.text
    assert "record_recalls" in answer.text
    assert client.get("/v1/me").json()["record_recalls"] is True


def test_an_unknown_memorys_recalls_are_not_found(client):
    answer = client.get("/v1/memories/01900000-0000-7000-8000-000000000000/recalls")
    assert answer.status_code == 404
    assert client.get("/v1/memories/not-an-id/recalls").status_code == 404  # as every memory route
