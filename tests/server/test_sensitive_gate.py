"""The sensitive-data gate through the faces: the chat proxy (the official openai client), the
API's memories and turns, and the account settings; the database files are read byte by byte."""

from __future__ import annotations

import pytest

from tests.helpers import extraction
from tests.sensitive_cases import SAID, needles, start_clean, stored_bytes
from tests.server.api import ok, wait_for_job
from tests.server.test_chat_support import ai, view  # noqa: F401

pytestmark = pytest.mark.slow  # each test runs a real server

ALL_SAID = "\n".join(text for text, _, _ in SAID)


def test_no_blocked_value_reaches_the_database_through_any_face(
    ai,  # noqa: F811
    view,  # noqa: F811
    client,
    scripted_llm,
    tmp_path,
):
    start_clean(view.store)
    # the proxy: the reply, then the turn's extraction, which proposes every value as a memory
    scripted_llm.reply("Noted.")
    scripted_llm.reply_json(extraction(*(text for text, _, _ in SAID)))
    completion = ai.chat.completions.create(
        model="scripted-model", messages=[{"role": "user", "content": ALL_SAID}]
    )
    assert completion.choices[0].message.content == "Noted."
    (job,) = view.settled_jobs(1)
    said, _ = view.messages(job)
    assert "[credential]" in said.content and "[card ending 4242]" in said.content
    result = ok(client.get(f"/v1/jobs/{job.id}"))["result"]
    assert result["sensitive"]["credential"] == {"block": 7}
    assert all(needle not in str(result) for _, needle, _ in SAID)
    # the API: a memory holding a credential is refused, naming the category only
    for text, needle, kind in SAID:
        reply = client.post("/v1/memories", json={"text": text})
        if kind == "credential":
            assert reply.status_code == 422, reply.text
            assert "credential" in reply.text and needle not in reply.text
        else:
            assert reply.status_code in (200, 201), reply.text
            assert needle not in reply.text
    # a turn submitted through the API
    scripted_llm.reply_json(extraction())
    queued = ok(client.post("/v1/turns", json={"messages": [{"role": "user", "content": ALL_SAID}]}), 202)
    wait_for_job(client, queued["job"]["id"])

    raw = stored_bytes(view.store, tmp_path)
    assert b"[card ending 4242]" in raw  # the check sees what was written
    for needle in needles():
        assert needle not in raw, needle


def test_the_gate_is_read_and_set_on_the_account(client, other):
    me = ok(client.get("/v1/me"))
    assert me["sensitive_gate"] == {
        "credential": "block",
        "card": "redact",
        "bank_account": "redact",
        "government_id": "redact",
        "phone": "allow",
        "email": "allow",
    }
    changed = ok(client.patch("/v1/me/settings", json={"sensitive_gate": {"card": "allow", "phone": "hold"}}))
    assert changed["sensitive_gate"]["card"] == "allow" and changed["sensitive_gate"]["phone"] == "hold"
    assert changed["sensitive_gate"]["credential"] == "block"
    for bad in ({"cards": "allow"}, {"card": "shred"}, {"card": None}, None, [], "allow"):
        reply = client.patch("/v1/me/settings", json={"sensitive_gate": bad})
        assert reply.status_code == 422, (bad, reply.text)
    assert ok(client.get("/v1/me"))["sensitive_gate"] == changed["sensitive_gate"]  # nothing changed
    assert ok(other.get("/v1/me"))["sensitive_gate"]["card"] == "redact"  # another person's is theirs
    card = ok(client.post("/v1/memories", json={"text": "Card 4242 4242 4242 4242"}), 201)
    assert card["text"] == "Card 4242 4242 4242 4242"
    theirs = ok(other.post("/v1/memories", json={"text": "Card 4242 4242 4242 4242"}), 201)
    assert theirs["text"] == "Card [card ending 4242]"


KEY = "sk-proj-Zq3vT8wLm2Xr9Kd4Hs7Jp1Nc6Bf5Yg0A"
CARD = "4111 1111 1111 1111"


def test_names_and_conversation_ids_holding_what_the_gate_keeps_out_are_refused(
    ai,  # noqa: F811
    client,
    scripted_llm,
):
    """An agent's name, a key's name, a turn's conversation id (the API's and the proxy's header)
    holding a credential or a card: 422 (the proxy: 400) naming the kind, never the value, and
    nothing stored; a persona holding one is stored masked."""
    import openai

    refused = [
        client.post("/v1/agents", json={"name": f"bank {KEY}"}),
        client.post("/v1/me/keys", json={"name": f"card {CARD}"}),
        client.post(
            "/v1/turns",
            json={"conversation_id": f"card {CARD}", "messages": [{"role": "user", "content": "hi"}]},
        ),
    ]
    for answer in refused:
        assert answer.status_code == 422, answer.text
        assert (
            "keeps out of names" in answer.text and KEY not in answer.text and "1111 1111" not in answer.text
        )
    with pytest.raises(openai.BadRequestError) as header:
        ai.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Mnemo-Conversation": f"card {CARD}"},
        )
    assert "payment card number" in str(header.value) and "1111 1111" not in str(header.value)
    assert scripted_llm.chat_requests() == []  # refused before the model was asked

    agent = ok(client.post("/v1/agents", json={"name": "bank", "persona": f"My card is {CARD}"}), 201)
    assert agent["persona"] == "My card is [card ending 1111]"
    changed = client.patch(f"/v1/agents/{agent['id']}", json={"name": KEY})
    assert changed.status_code == 422 and KEY not in changed.text
    assert [a["name"] for a in ok(client.get("/v1/agents"))] == ["bank"]
    assert all("1111 1111" not in k["name"] for k in ok(client.get("/v1/me/keys")))
