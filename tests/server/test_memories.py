"""The memories routes over HTTP: write, correct, retract, restore, purge, history, list, search."""

from __future__ import annotations

import pytest

from tests.server.api import add, ok, texts

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)


def test_a_written_memory_is_stored_as_the_persons_own(client):
    fact = add(client, "  I live in   Lisbon ", category="identity")
    assert fact["text"] == "I live in Lisbon"
    assert (fact["category"], fact["status"], fact["confidence"]) == ("identity", "active", 1.0)
    assert fact["source"]["kind"] == "api" and fact["version"] == 1
    assert ok(client.get(f"/v1/memories/{fact['id']}")) == fact
    [event] = ok(client.get(f"/v1/memories/{fact['id']}/history"))
    assert (event["action"], event["actor"]) == ("create", "user")


def test_restating_a_memory_reinforces_it(client):
    first = add(client, "I live in Lisbon")
    again = ok(client.post("/v1/memories", json={"text": "i live in lisbon.", "pinned": True}))
    assert again["id"] == first["id"] and again["mentions"] == 2 and again["pinned"]
    assert texts(ok(client.get("/v1/memories"))) == ["I live in Lisbon"]


@pytest.mark.citus_ci
def test_an_edit_keeps_id_and_created_date_and_history_shows_the_old_text(client):
    fact = add(client, "I live in Lisbon")
    edited = ok(client.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "text": "I live in Porto"}))
    assert edited["id"] == fact["id"] and edited["created_at"] == fact["created_at"]
    assert (edited["text"], edited["version"]) == ("I live in Porto", 2)
    history = ok(client.get(f"/v1/memories/{fact['id']}/history"))
    assert [e["action"] for e in history] == ["create", "edit"]
    assert (history[1]["before"]["text"], history[1]["after"]["text"]) == (
        "I live in Lisbon",
        "I live in Porto",
    )
    assert texts(ok(client.get("/v1/memories"))) == ["I live in Porto"]


def test_a_stale_version_is_a_conflict_and_changes_nothing(client):
    fact = add(client, "I live in Lisbon")
    ok(client.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "pinned": True}))
    stale = client.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "text": "I live in Porto"})
    assert stale.status_code == 409 and "version 2" in stale.json()["error"]["message"]
    assert ok(client.get(f"/v1/memories/{fact['id']}"))["text"] == "I live in Lisbon"
    stale_delete = client.delete(f"/v1/memories/{fact['id']}", params={"version": 1})
    assert stale_delete.status_code == 409


def test_one_patch_changes_text_category_and_pin_together(client):
    fact = add(client, "I live in Lisbon")
    body = {"version": 1, "text": "I live in Porto", "category": "identity", "pinned": True}
    edited = ok(client.patch(f"/v1/memories/{fact['id']}", json=body))
    assert (edited["text"], edited["category"], edited["pinned"]) == ("I live in Porto", "identity", True)
    assert [e["action"] for e in ok(client.get(f"/v1/memories/{fact['id']}/history"))] == [
        "create",
        "edit",
        "pin",
    ]
    unchanged = ok(client.patch(f"/v1/memories/{fact['id']}", json={"version": 3, "pinned": True}))
    assert unchanged["version"] == 3  # nothing new: no event


def test_delete_leaves_a_tombstone_and_restore_brings_it_back(client):
    fact = add(client, "I live in Lisbon")
    add(client, "I have a cat named Miso")
    gone = ok(client.delete(f"/v1/memories/{fact['id']}"))
    assert gone["status"] == "retracted" and gone["text"] == "I live in Lisbon"
    assert ok(client.get(f"/v1/memories/{fact['id']}"))["status"] == "retracted"
    assert texts(ok(client.get("/v1/memories"))) == ["I have a cat named Miso"]
    assert texts(ok(client.get("/v1/memories", params={"status": "retracted"}))) == ["I live in Lisbon"]
    found = ok(client.post("/v1/memories/search", json={"query": "where do I live? Lisbon"}))
    assert "I live in Lisbon" not in texts(found)
    again = client.delete(f"/v1/memories/{fact['id']}")
    assert again.status_code == 422 and "retracted" in again.json()["error"]["message"]

    restored = ok(client.post(f"/v1/memories/{fact['id']}/restore"))
    assert restored["status"] == "active" and restored["id"] == fact["id"]
    found = ok(client.post("/v1/memories/search", json={"query": "where do I live? Lisbon"}))
    assert texts(found)[0] == "I live in Lisbon"
    history = ok(client.get(f"/v1/memories/{fact['id']}/history"))
    assert [e["action"] for e in history] == ["create", "retract", "restore"]


@pytest.mark.citus_ci
def test_purge_erases_the_text_everywhere_and_the_chain_still_verifies(client):
    fact = add(client, "My bank PIN is 432187")
    ok(client.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "text": "My bank PIN is 987654"}))
    purged = ok(client.delete(f"/v1/memories/{fact['id']}", params={"purge": "true"}))
    assert purged["purged"] and purged["text"] == "" and purged["status"] == "retracted"
    history = client.get(f"/v1/memories/{fact['id']}/history")
    assert [e["action"] for e in history.json()] == ["create", "edit", "purge"]
    for reply in (history, client.get("/v1/audit"), client.get("/v1/memories", params={"status": "all"})):
        # six digits: a reply's hashes and ids are hex, where four digits turn up now and then
        assert "432187" not in reply.text and "987654" not in reply.text
    assert ok(client.get("/v1/audit/verify")) == {"ok": True, "events": 3, "problems": []}
    assert client.post(f"/v1/memories/{fact['id']}/restore").status_code == 422


def test_list_filters_statuses_and_pages(client):
    ids = [add(client, f"I own a bicycle numbered {i}")["id"] for i in range(5)]
    ok(client.delete(f"/v1/memories/{ids[0]}"))
    first = ok(client.get("/v1/memories", params={"limit": 2}))
    assert len(first["items"]) == 2 and first["next_offset"] == 2
    rest = ok(client.get("/v1/memories", params={"limit": 2, "offset": 2}))
    assert len(rest["items"]) == 2 and rest["next_offset"] is None
    assert [f["id"] for f in first["items"] + rest["items"]] == ids[:0:-1]  # newest first
    both = ok(client.get("/v1/memories", params=[("status", "active"), ("status", "retracted")]))
    assert len(both["items"]) == 5
    assert len(ok(client.get("/v1/memories", params={"status": "all"}))["items"]) == 5


def test_q_finds_by_text_and_as_of_shows_the_past(client):
    lisbon = add(client, "I live in Lisbon")
    add(client, "I have a cat named Miso")
    assert texts(ok(client.get("/v1/memories", params={"q": "Miso the cat"})))[0] == "I have a cat named Miso"
    before_edit = ok(client.get(f"/v1/audit?fact_id={lisbon['id']}"))["items"][0]["at"]
    ok(client.patch(f"/v1/memories/{lisbon['id']}", json={"version": 1, "text": "I live in Porto"}))
    past = ok(client.get("/v1/memories", params={"as_of": before_edit}))
    assert "I live in Lisbon" in texts(past) and "I live in Porto" not in texts(past)
    naive = before_edit.replace("Z", "").split("+")[0]  # a naive date-time is UTC
    assert texts(ok(client.get("/v1/memories", params={"as_of": naive}))) == texts(past)
    mixed = client.get("/v1/memories", params={"q": "Lisbon", "status": "retracted"})
    assert mixed.status_code == 422 and "active" in mixed.json()["error"]["message"]


def test_search_says_why_each_memory_came_back(client):
    add(client, "I am allergic to peanuts", pinned=True)
    add(client, "I live in Lisbon")
    found = ok(client.post("/v1/memories/search", json={"query": "which city do I live in, Lisbon?"}))
    assert found["enable_memory"] is True
    by_text = {h["fact"]["text"]: h for h in found["items"]}
    assert "pinned" in by_text["I am allergic to peanuts"]["reasons"]
    lisbon = by_text["I live in Lisbon"]["reasons"]
    assert {"semantic", "lexical"} <= set(lisbon) and lisbon["lexical"]["rank"] == 1
    assert ok(client.post("/v1/memories/search", json={"query": "Lisbon", "limit": 1}))["items"][0]["fact"][
        "pinned"
    ]


def test_with_memory_off_search_recalls_nothing_but_the_list_still_shows_everything(client):
    add(client, "I live in Lisbon")
    ok(client.patch("/v1/me/settings", json={"memory_enabled": False}))
    found = ok(client.post("/v1/memories/search", json={"query": "Lisbon"}))
    assert found == {"items": [], "enable_memory": False}
    assert texts(ok(client.get("/v1/memories"))) == ["I live in Lisbon"]
    assert texts(ok(client.get("/v1/memories", params={"q": "Lisbon"}))) == ["I live in Lisbon"]


def test_agents_keep_their_own_memories(client):
    coach = ok(client.post("/v1/agents", json={"name": "coach", "private": True}), 201)
    add(client, "I run 10 km on Sundays", agent_id=coach["id"])
    add(client, "I live in Lisbon")
    assert texts(ok(client.get("/v1/memories"))) == ["I live in Lisbon", "I run 10 km on Sundays"]
    assert texts(ok(client.get("/v1/memories", params={"agent_id": coach["id"]}))) == [
        "I run 10 km on Sundays"
    ]
    # the default assistant does not read a private agent's memories
    found = ok(client.post("/v1/memories/search", json={"query": "running on Sundays"}))
    assert "I run 10 km on Sundays" not in texts(found)
    found = ok(client.post("/v1/memories/search", json={"query": "running", "agent_id": coach["id"]}))
    assert texts(found) == ["I run 10 km on Sundays"]

    renamed = ok(client.patch(f"/v1/agents/{coach['id']}", json={"name": "trainer", "persona": "Be brief."}))
    assert (renamed["name"], renamed["persona"], renamed["private"]) == ("trainer", "Be brief.", True)
    assert ok(client.patch(f"/v1/agents/{coach['id']}", json={"persona": None}))["persona"] is None
    deleted = ok(client.delete(f"/v1/agents/{coach['id']}"))
    assert deleted["retracted"] == 1 and deleted["agent"]["name"] == "trainer"
    assert ok(client.get("/v1/agents")) == []
    assert texts(ok(client.get("/v1/memories"))) == ["I live in Lisbon"]
    tombstone = ok(client.get("/v1/memories", params={"status": "retracted"}))["items"][0]
    assert tombstone["text"] == "I run 10 km on Sundays"  # retracted, not erased
    assert client.get("/v1/memories", params={"agent_id": coach["id"]}).status_code == 404
