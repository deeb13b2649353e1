"""Every stored turn's state, readable by its person: over the API, named by the chat proxy's
reply, and told in the server log by counts, ids and a reason category, never by what was said."""

from __future__ import annotations

import logging
import time

import httpx2
import pytest

from mnemo.settings import JobSettings
from tests.fakes.live_server import LiveServer
from tests.helpers import extraction
from tests.server.api import client_for, ok, submit
from tests.server.test_chat_support import ai, proxied  # noqa: F401

pytestmark = pytest.mark.slow  # each test runs a real server

SECRET = "My grandmother's ring is hidden under the blue floorboard"
MODEL = "scripted-model"
FINISHED = ("learnt", "failed", "skipped", "waiting_for_model")


@pytest.fixture
def server_settings(server_settings):
    jobs = JobSettings(lease_seconds=5, backoff_seconds=0.1, poll_seconds=0.05, max_attempts=2)
    return server_settings.model_copy(update={"jobs": jobs})


def settled(client: httpx2.Client, turn_id: str, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while (turn := ok(client.get(f"/v1/turns/{turn_id}")))["state"] not in FINISHED:
        assert time.monotonic() < deadline, turn
        time.sleep(0.05)
    return turn


def memory_ids(client: httpx2.Client) -> dict[str, str]:
    return {f["text"]: f["id"] for f in ok(client.get("/v1/memories"))["items"]}


def test_a_learnt_turn_names_the_facts_it_created_and_reinforced(client, scripted_llm):
    scripted_llm.reply_json(extraction("I have a cat named Miso", "I live in Lisbon"))
    first = submit(client, "I have a cat named Miso and I live in Lisbon")["job"]["id"]
    turn = settled(client, first)
    ids = memory_ids(client)
    assert turn["state"] == "learnt" and turn["reason"] is None and turn["attempts"] == 1
    assert sorted(turn["facts"]["created"]) == sorted(ids.values())
    assert turn["facts"]["reinforced"] == turn["facts"]["held"] == turn["facts"]["superseded"] == []

    scripted_llm.reply_json(extraction("I live in Lisbon"))
    again = settled(client, submit(client, "I still live in Lisbon")["job"]["id"])
    assert again["facts"]["reinforced"] == [ids["I live in Lisbon"]] and again["facts"]["created"] == []

    listed = ok(client.get("/v1/turns", params={"state": "learnt", "limit": 1}))
    assert [t["id"] for t in listed["items"]] == [again["id"]] and listed["next_offset"] == 1
    rest = ok(client.get("/v1/turns", params={"state": "learnt", "limit": 1, "offset": 1}))
    assert [t["id"] for t in rest["items"]] == [first] and rest["next_offset"] is None
    assert ok(client.get("/v1/turns", params={"state": "queued"}))["items"] == []
    # the jobs routes read the same turns
    assert ok(client.get(f"/v1/jobs/{first}"))["status"] == "done"


def test_a_turn_held_for_review_names_its_candidates(client, scripted_llm):
    ok(client.patch("/v1/me/settings", json={"review_policy": "review"}))
    scripted_llm.reply_json(extraction("I have a cat named Miso"))
    turn = settled(client, submit(client, "I have a cat named Miso")["job"]["id"])
    [candidate] = ok(client.get("/v1/review"))["items"]
    assert turn["state"] == "learnt" and turn["facts"]["held"] == [candidate["id"]]
    assert turn["facts"]["created"] == []


UNMENDED = "not tried again: trying would not mend it"


@pytest.mark.parametrize(
    ("script", "reason", "attempts", "then"),
    [
        (lambda llm: llm.fail(503, SECRET, times=10), "model_unreachable", 2, "no attempt left"),
        (lambda llm: llm.fail(400, SECRET), "refused_by_policy", 1, UNMENDED),
        (lambda llm: llm.reply(f"I cannot help with that. {SECRET}"), "invalid_reply", 1, UNMENDED),
    ],
    ids=["unreachable", "refused", "invalid"],
)
def test_a_failed_turn_says_why_by_category_and_the_log_never_quotes_it(
    client, scripted_llm, caplog, script, reason, attempts, then
):
    caplog.set_level(logging.DEBUG, logger="mnemo")
    caplog.set_level(logging.INFO, logger="mnemo.write")  # its debug lines quote problems, by design
    script(scripted_llm)
    turn = settled(client, submit(client, SECRET)["job"]["id"])
    assert turn["state"] == "failed" and turn["reason"] == reason and turn["attempts"] == attempts
    assert ok(client.get("/v1/turns", params={"state": "failed"}))["items"][0]["id"] == turn["id"]
    assert SECRET not in str(turn)
    assert ok(client.get("/v1/memories"))["items"] == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"turn {turn['id']} failed: {reason} (attempt {attempts} of 2; {then})" in warnings
    assert SECRET not in caplog.text and "floorboard" not in caplog.text


def test_the_log_has_one_line_per_finished_turn_with_counts_and_ids(client, scripted_llm, caplog):
    caplog.set_level(logging.INFO, logger="mnemo")
    scripted_llm.reply_json(extraction(SECRET))
    turn = settled(client, submit(client, SECRET)["job"]["id"])
    [fact_id] = turn["facts"]["created"]
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"turn {turn['id']}")]
    assert lines == [
        f"turn {turn['id']} learnt: created 1, updated 0, superseded 0, reinforced 0, retracted 0,"
        f" held 0 [{fact_id}]"
    ]
    assert SECRET not in caplog.text


def test_another_persons_turn_reads_as_missing(client, other, scripted_llm):
    scripted_llm.reply_json(extraction())
    mine = submit(client, "Hello")["job"]["id"]
    settled(client, mine)
    theirs = other.get(f"/v1/turns/{mine}")
    missing_id = mine[:-4] + ("0000" if not mine.endswith("0000") else "1111")
    missing = client.get(f"/v1/turns/{missing_id}")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["error"]["message"].replace(mine, "ID") == missing.json()["error"][
        "message"
    ].replace(missing_id, "ID")
    assert ok(other.get("/v1/turns"))["items"] == []
    for bad in ("not-an-id", "x" * 5000, "ünïcödé", "%00"):
        assert client.get(f"/v1/turns/{bad}").status_code == 404
    assert client.get("/v1/turns", params={"state": "done"}).status_code == 422
    assert client.get("/v1/turns", params={"limit": 0}).status_code == 422


def test_the_proxy_names_the_stored_turn_and_the_recalled_facts(ai, client, scripted_llm):  # noqa: F811
    lisbon = ok(client.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)["id"]
    scripted_llm.reply("Lisbon is lovely.")
    scripted_llm.reply_json(extraction())
    raw = ai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Where do I live?"}]
    )
    assert raw.headers["x-mnemo-recalled"] == "1" and raw.headers["x-mnemo-recalled-ids"] == lisbon
    turn_id = raw.headers["x-mnemo-turn"]
    # read-your-writes: the turn is there as soon as the reply is
    assert ok(client.get(f"/v1/turns/{turn_id}"))["state"] in ("queued", "learning", "learnt")
    assert settled(client, turn_id)["state"] == "learnt"

    scripted_llm.reply("Noted.")
    raw = ai.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Run the nightly summary"}],
        extra_headers={"X-Mnemo-Automation": "true"},
    )
    assert "x-mnemo-turn" not in raw.headers and raw.headers["x-mnemo-stored"] == "false"


def test_a_streamed_reply_names_its_turn_before_it_is_stored(ai, client, scripted_llm):  # noqa: F811
    scripted_llm.reply("Streamed hello.")
    scripted_llm.reply_json(extraction())
    raw = ai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    turn_id = raw.headers["x-mnemo-turn"]
    assert raw.headers["x-mnemo-recalled-ids"] == ""
    text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
    assert text == "Streamed hello."
    # read to its end, the stream's turn is stored
    assert ok(client.get(f"/v1/turns/{turn_id}"))["id"] == turn_id
    assert settled(client, turn_id)["state"] == "learnt"

    ok(client.patch("/v1/me/settings", json={"memory_enabled": False}))
    scripted_llm.reply("Off the record.")
    raw = ai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi again"}], stream=True
    )
    assert "x-mnemo-turn" not in raw.headers and raw.headers["x-mnemo-stored"] == "false"
    list(raw.parse())
    assert [t["id"] for t in ok(client.get("/v1/turns"))["items"]] == [turn_id]


def test_without_a_chat_model_turns_wait_and_a_model_learns_them_later(server_settings, scripted_llm):
    said = "Remember that I live in Lisbon. I have a cat named Miso."
    no_model = server_settings.model_copy(update={"llm_base_url": None, "llm_model": None})
    with LiveServer(no_model) as live, client_for(live, live.token) as client:
        turn_id = submit(client, said)["job"]["id"]
        waiting = settled(client, turn_id)
        assert waiting["state"] == "waiting_for_model"
        [lisbon] = waiting["facts"]["created"]  # the explicit request is learnt at once
        assert memory_ids(client) == {"I live in Lisbon": lisbon}
        assert [
            t["id"] for t in ok(client.get("/v1/turns", params={"state": "waiting_for_model"}))["items"]
        ] == [turn_id]
        token = live.token

    scripted_llm.reply_json(extraction("I live in Lisbon", "I have a cat named Miso"))
    with LiveServer(server_settings) as live, client_for(live, token) as client:
        learnt = settled(client, turn_id)
        ids = memory_ids(client)
        assert learnt["state"] == "learnt"
        assert sorted(learnt["facts"]["created"]) == sorted(ids.values())
        assert learnt["facts"]["reinforced"] == []  # the same turn is no second mention
        assert ok(client.get(f"/v1/memories/{lisbon}"))["mentions"] == 1
