"""Erasures over HTTP: the preview, the erasure with its signed receipt, the receipts, the check."""

from __future__ import annotations

import copy
import json

import pytest

from tests.server.api import add, ok, texts

pytestmark = pytest.mark.slow  # each test runs a real server

PIN = "My bank PIN is 660311"


def test_erasing_a_memory_erases_its_turn_and_answers_with_a_signed_receipt(client, other):
    said = ok(
        client.post(
            "/v1/turns",
            json={"messages": [{"role": "user", "content": PIN}, {"role": "assistant", "content": "Noted."}]},
        ),
        202,
    )
    assert said["queued"]
    fact = add(client, PIN)
    preview = ok(client.post("/v1/erasures/preview", json={"memory_id": fact["id"]}))
    assert [m["id"] for m in preview["memories"]] == [fact["id"]] and len(preview["messages"]) == 1
    assert other.post("/v1/erasures/preview", json={"memory_id": fact["id"]}).status_code == 404

    receipt = ok(client.post("/v1/erasures", json={"memory_id": fact["id"]}), 201)
    assert receipt["kind"] == "memory" and receipt["body"]["erased"]["facts"] == [fact["id"]]
    assert receipt["body"]["erased"]["counts"]["messages"] == 1
    assert "660311" not in repr(receipt)
    gone = ok(client.get(f"/v1/memories/{fact['id']}"))
    assert gone["purged"] and gone["text"] == ""
    assert texts(ok(client.get("/v1/memories"))) == []

    key = ok(client.get("/v1/erasures/key"))["public_key"]
    assert receipt["body"]["public_key"] == key
    document = {"body": receipt["body"], "signature": receipt["signature"]}
    assert ok(client.post("/v1/erasures/verify", json=document)) == {"valid": True, "problems": []}
    changed = copy.deepcopy(document)
    changed["body"]["erased"]["counts"]["messages"] = 0
    assert not ok(client.post("/v1/erasures/verify", json=changed))["valid"]
    assert not ok(other.post("/v1/erasures/verify", json=document))["valid"]  # not theirs
    # a key named twice: the parsed body keeps the last (the true) value, a reader may show the first
    body = json.dumps(receipt["body"], separators=(",", ":"))
    twice = body.replace('{"', '{"user":"someone else","', 1)
    raw = f'{{"body":{twice},"signature":"{receipt["signature"]}"}}'
    sent = client.post("/v1/erasures/verify", content=raw, headers={"Content-Type": "application/json"})
    assert ok(sent)["valid"] is False and "twice" in ok(sent)["problems"][0]
    assert [r["id"] for r in ok(client.get("/v1/erasures"))["items"]] == [receipt["id"]]
    assert ok(client.get(f"/v1/erasures/{receipt['id']}")) == receipt
    assert other.get(f"/v1/erasures/{receipt['id']}").status_code == 404
    assert ok(other.get("/v1/erasures"))["items"] == []


def test_purge_names_its_receipt_and_a_conversation_goes_whole(client):
    fact = add(client, PIN)
    purged = client.delete(f"/v1/memories/{fact['id']}", params={"purge": "true"})
    assert purged.status_code == 200 and purged.json()["purged"]
    receipt = ok(client.get(purged.headers["location"]))
    assert receipt["body"]["erased"]["facts"] == [fact["id"]]

    turn = {"conversation_id": "trip", "messages": [{"role": "user", "content": "I fly to Oslo on May 3"}]}
    assert ok(client.post("/v1/turns", json=turn), 202)["queued"]
    receipt = ok(client.post("/v1/erasures", json={"conversation_id": "trip", "with_memories": True}), 201)
    assert receipt["body"]["erased"]["conversations"] == ["trip"]
    assert client.post("/v1/erasures", json={"conversation_id": "trip"}).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"memory_id": "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c", "conversation_id": "x"},
        {"memory_id": "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c", "with_memories": True},
        {"memory_id": "not-an-id"},
        {"conversation_id": "  "},
        {"everything": True},
        {"everything": True, "confirm": "yes"},
        {"memory_id": "0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c", "confirm": "erase everything"},
        {
            "memory_ids": ["0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"],
            "everything": True,
            "confirm": "erase everything",
        },
        {"message_ids": [""]},
        {"memory_ids": [], "message_ids": []},
    ],
)
def test_an_unclear_erasure_is_refused_and_erases_nothing(client, body):
    fact = add(client, PIN)
    answer = client.post("/v1/erasures", json=body)
    assert answer.status_code == 422, answer.text
    assert texts(ok(client.get("/v1/memories"))) == [PIN] and ok(client.get(f"/v1/memories/{fact['id']}"))


def test_about_a_subject_shows_what_holds_its_words_and_erases_what_is_ticked(client, other):
    ok(
        client.post(
            "/v1/turns", json={"messages": [{"role": "user", "content": "My sister lives in Berlin now"}]}
        ),
        202,
    )
    berlin = add(client, "My sister lives in Berlin")
    add(client, "I was in Berlin in 2019")
    add(other, "I love Berlin")  # someone else's
    found = ok(client.get("/v1/erasures/about", params={"q": "berlin"}))
    assert sorted(m["text"] for m in found["memories"]) == [
        "I was in Berlin in 2019",
        "My sister lives in Berlin",
    ]
    assert [m["text"] for m in found["messages"]] == ["My sister lives in Berlin now"]

    ticked = {"memory_ids": [berlin["id"]], "message_ids": [found["messages"][0]["message_id"]]}
    preview = ok(client.post("/v1/erasures/preview", json=ticked))
    assert preview["kind"] == "selection" and len(preview["messages"]) == 1
    receipt = ok(client.post("/v1/erasures", json=ticked), 201)
    assert receipt["body"]["erased"]["counts"]["facts"] == 1
    assert receipt["body"]["erased"]["counts"]["messages"] == 1
    assert texts(ok(client.get("/v1/memories"))) == ["I was in Berlin in 2019"]
    assert (
        ok(other.get("/v1/erasures/about", params={"q": "berlin"}))["memories"][0]["text"] == "I love Berlin"
    )
    missing = client.post("/v1/erasures", json={"message_ids": ["no-such-message"]})
    assert missing.status_code == 404


def test_erasing_everything_keeps_the_person_their_key_in_use_and_a_verified_log(client, server):
    for text in ("My bank PIN is 660311", "I live in Lisbon"):
        add(client, text)
    ok(
        client.post("/v1/turns", json={"messages": [{"role": "user", "content": "I fly to Oslo on May 3"}]}),
        202,
    )
    spare = ok(client.post("/v1/me/keys", json={"name": "old laptop"}), 201)
    ok(client.post("/v1/agents", json={"name": "Rosalind's coach", "persona": "Rosalind is pregnant"}), 201)
    preview = ok(
        client.post("/v1/erasures/preview", json={"everything": True, "confirm": "erase everything"})
    )
    assert len(preview["memories"]) == 2 and len(preview["conversations"]) == 1 and preview["keys"]

    receipt = ok(client.post("/v1/erasures", json={"everything": True, "confirm": "erase everything"}), 201)
    counts = receipt["body"]["erased"]["counts"]
    assert (counts["facts"], counts["conversations"], counts["keys"]) == (2, 1, 1)
    left = ok(client.get("/v1/memories", params={"status": "all"}))["items"]
    assert len(left) == 2 and all(m["purged"] and m["text"] == "" for m in left)
    assert ok(client.get("/v1/turns"))["items"] == []
    assert ok(client.get("/v1/audit/verify"))["ok"]  # the key in use still works
    assert "660311" not in repr(ok(client.get("/v1/audit")))
    keys = ok(client.get("/v1/me/keys"))
    assert spare["id"] not in repr(keys)
    assert [k["name"] for k in keys] == ["kept when everything was erased"]  # its name was the person's
    assert ok(client.get("/v1/agents")) == [] and counts["agents"] == 1


@pytest.mark.backend("sqlite")
def test_an_erasure_says_when_a_reader_holds_its_text_in_the_log(client, server_settings):
    """Another process reading the database keeps the write-ahead log's frames: the erasure's
    answer (not its signed body) and the purge's header say the text stays in the -wal file
    until that reader lets go; once it has, the next erasure says nothing of it."""
    import sqlean

    first, second, third = (add(client, f"{PIN}{n}") for n in range(3))
    reader = sqlean.connect(str(server_settings.data_dir / "mnemo.db"), isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM facts").fetchone()
    receipt = ok(client.post("/v1/erasures", json={"memory_id": first["id"]}), 201)
    assert "another process is reading" in receipt["lingering"] and "mnemo.db-wal" in receipt["lingering"]
    assert "lingering" not in receipt["body"]
    purged = client.delete(f"/v1/memories/{second['id']}", params={"purge": "true"})
    assert "mnemo.db-wal" in purged.headers["x-mnemo-lingering"]
    reader.execute("COMMIT")
    reader.close()
    assert ok(client.post("/v1/erasures", json={"memory_id": third["id"]}), 201)["lingering"] is None


CORIANDER = "I hate coriander"
LETTER = (
    "Here is my whole cover letter. "
    + "I led the billing migration. " * 100
    + "I hate coriander, by the way. "
    + "We shipped on time. " * 100
)


def _said(client, conversation: str, text: str) -> None:
    turn = {"conversation_id": conversation, "messages": [{"role": "user", "content": text}]}
    ok(client.post("/v1/turns", json=turn), 202)


def test_the_preview_shows_each_message_where_it_is_and_offers_long_ones_and_other_agents(client):
    """A short memory's erasure takes the short message that says it, shown by conversation,
    time, role and text; the 5,000-character one is offered by an excerpt, and stays; the same
    text in another agent's memory is named, and goes only when asked."""
    _said(client, "letter", LETTER)
    _said(client, "short", "I hate coriander!")
    chef = ok(client.post("/v1/agents", json={"name": "chef", "private": True}), 201)
    fact = add(client, CORIANDER)
    copy = add(client, CORIANDER, agent_id=chef["id"])

    preview = ok(client.post("/v1/erasures/preview", json={"memory_id": fact["id"]}))
    [said] = preview["messages"]
    assert (said["conversation_id"], said["role"], said["excerpt"], said["why"]) == (
        "short",
        "user",
        "I hate coriander!",
        "says it",
    )
    assert said["at"] and said["characters"] == len("I hate coriander!")
    [offered] = preview["offered_messages"]
    assert offered["conversation_id"] == "letter" and offered["characters"] == len(LETTER)
    assert "I hate coriander" in offered["excerpt"] and len(offered["excerpt"]) < 300
    assert [m["id"] for m in preview["other_agents"]] == [copy["id"]]

    kept = {"memory_id": fact["id"], "keep_message_ids": [said["message_id"]]}
    assert ok(client.post("/v1/erasures/preview", json=kept))["messages"] == []
    receipt = ok(client.post("/v1/erasures", json=kept), 201)
    assert receipt["body"]["erased"]["messages"] == []
    left = ok(client.get("/v1/erasures/about", params={"q": "coriander"}))
    assert sorted(m["text"] for m in left["messages"]) == sorted([LETTER, "I hate coriander!"])
    assert [m["id"] for m in left["memories"]] == [copy["id"]]

    again = add(client, CORIANDER)
    every = {"memory_id": again["id"], "message_ids": [offered["message_id"]], "with_other_agents": True}
    receipt = ok(client.post("/v1/erasures", json=every), 201)
    assert sorted(receipt["body"]["erased"]["facts"]) == sorted([again["id"], copy["id"]])
    assert sorted(receipt["body"]["erased"]["messages"]) == sorted(
        [offered["message_id"], said["message_id"]]
    )
    assert ok(client.get("/v1/erasures/about", params={"q": "coriander"})) == {"memories": [], "messages": []}
