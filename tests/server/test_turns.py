"""Finished turns handed over HTTP: stored, queued, learnt from by the worker, with provenance."""

from __future__ import annotations

import pytest

from mnemo.settings import JobSettings
from tests.helpers import extraction
from tests.server.api import ok, submit, texts, wait_for_job

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)


@pytest.fixture
def server_settings(server_settings):
    jobs = JobSettings(lease_seconds=5, backoff_seconds=0.1, poll_seconds=0.05, max_attempts=2)
    return server_settings.model_copy(update={"jobs": jobs})


@pytest.mark.citus_ci
def test_a_turn_is_queued_then_learnt_with_its_provenance(client, scripted_llm):
    scripted_llm.reply_json(extraction("I have a cat named Miso"))
    reply = client.post(
        "/v1/turns",
        json={
            "conversation_id": "kitchen-chat",
            "messages": [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "My cat Miso knocked over a plant."},
                {"role": "assistant", "content": "Oh no, poor plant!"},
            ],
        },
    )
    assert reply.status_code == 202, reply.text
    queued = reply.json()
    assert queued["queued"] is True and queued["job"]["status"] in ("pending", "claimed", "done")
    assert queued["job"]["conversation_id"] == "kitchen-chat" and len(queued["job"]["message_ids"]) == 3

    job = wait_for_job(client, queued["job"]["id"])
    assert job["status"] == "done" and job["error"] is None
    assert job["result"]["events"] == 1 and job["attempts"] == 1
    [fact] = ok(client.get("/v1/memories"))["items"]
    assert fact["text"] == "I have a cat named Miso"
    assert fact["source"]["kind"] == "user_message" and fact["source"]["conversation_id"] == "kitchen-chat"
    assert fact["source"]["message_ids"] and set(fact["source"]["message_ids"]) <= set(job["message_ids"])
    assert fact["source"]["extractor_model"] == "scripted-model"
    [event] = ok(client.get(f"/v1/memories/{fact['id']}/history"))
    assert event["actor"] == "extractor"
    assert [j["id"] for j in ok(client.get("/v1/jobs", params={"status": "done"}))["items"]] == [job["id"]]
    assert ok(client.get("/v1/jobs", params={"status": "pending"}))["items"] == []


def test_a_turn_for_an_agent_is_learnt_into_its_memory(client, scripted_llm):
    coach = ok(client.post("/v1/agents", json={"name": "coach"}), 201)
    scripted_llm.reply_json(extraction("I run 10 km on Sundays"))
    queued = submit(client, "I run 10 km on Sundays", agent_id=coach["id"])
    assert wait_for_job(client, queued["job"]["id"])["agent_id"] == coach["id"]
    [fact] = ok(client.get("/v1/memories", params={"agent_id": coach["id"]}))["items"]
    assert fact["agent_id"] == coach["id"]


def test_nothing_is_queued_when_memory_is_off_or_for_automation(client, admin, scripted_llm):
    said = {"messages": [{"role": "user", "content": "Remember that I live in Lisbon"}]}
    automation = client.post("/v1/turns", json={**said, "automation": True})
    assert automation.status_code == 200
    assert automation.json() == {
        "queued": False,
        "reason": "automation turns are never learnt from",
        "job": None,
    }

    ok(client.patch("/v1/me/settings", json={"memory_enabled": False}))
    off = client.post("/v1/turns", json=said)
    assert off.status_code == 200 and off.json()["queued"] is False and "off" in off.json()["reason"]

    ok(client.patch("/v1/me/settings", json={"memory_enabled": None}))
    ok(admin.patch("/v1/admin/settings", json={"memory_mode": "disabled"}))
    assert client.post("/v1/turns", json=said).json()["queued"] is False

    assert ok(client.get("/v1/jobs"))["items"] == []
    assert ok(client.get("/v1/memories"))["items"] == []
    assert scripted_llm.chat_requests() == []


def test_a_job_whose_model_stays_down_is_parked_with_its_reason(client, scripted_llm):
    scripted_llm.fail(503, "the model is overloaded", times=20)
    queued = submit(client, "I have a cat named Miso")
    job = wait_for_job(client, queued["job"]["id"])
    assert job["status"] == "failed" and job["attempts"] == 2
    assert "overloaded" in job["error"]
    assert [j["id"] for j in ok(client.get("/v1/jobs", params={"status": "failed"}))["items"]] == [job["id"]]
    assert ok(client.get("/v1/memories"))["items"] == []


def test_jobs_page_newest_first(client):
    ok(client.patch("/v1/me/settings", json={"memory_enabled": True}))
    ids = []
    for i in range(3):
        reply = client.post("/v1/turns", json={"messages": [{"role": "user", "content": f"hello {i}"}]})
        ids.append(reply.json()["job"]["id"])
    first = ok(client.get("/v1/jobs", params={"limit": 2}))
    assert [j["id"] for j in first["items"]] == ids[:0:-1] and first["next_offset"] == 2
    rest = ok(client.get("/v1/jobs", params={"limit": 2, "offset": 2}))
    assert [j["id"] for j in rest["items"]] == ids[:1] and rest["next_offset"] is None


def test_review_approve_and_reject_over_http(client, scripted_llm):
    ok(client.patch("/v1/me/settings", json={"review_policy": "review"}))
    scripted_llm.reply_json(extraction("I have a cat named Miso", "I live in Lisbon"))
    wait_for_job(client, submit(client, "I have a cat named Miso and I live in Lisbon")["job"]["id"])
    assert ok(client.get("/v1/memories"))["items"] == []
    queue = ok(client.get("/v1/review"))
    assert sorted(texts(queue)) == ["I have a cat named Miso", "I live in Lisbon"]
    by_text = {f["text"]: f["id"] for f in queue["items"]}
    approved = ok(client.post(f"/v1/review/{by_text['I live in Lisbon']}/approve"))
    assert approved["status"] == "active"
    rejected = ok(
        client.post(f"/v1/review/{by_text['I have a cat named Miso']}/reject", json={"reason": "no cat"})
    )
    assert rejected["status"] == "rejected"
    assert ok(client.get("/v1/review"))["items"] == []
    assert texts(ok(client.get("/v1/memories"))) == ["I live in Lisbon"]
    history = ok(client.get(f"/v1/memories/{by_text['I have a cat named Miso']}/history"))
    assert history[-1]["action"] == "reject" and history[-1]["reason"] == "no cat"
    again = client.post(f"/v1/review/{by_text['I live in Lisbon']}/approve")
    assert again.status_code == 422 and "active" in again.json()["error"]["message"]
    assert client.post(f"/v1/review/{by_text['I live in Lisbon']}/reject").status_code == 422
