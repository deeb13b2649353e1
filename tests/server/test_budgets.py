"""Tokens spent learning and daily budgets through the real server: turns told through the chat
proxy with the official client, the usage routes, the administrator's budget, the settings page."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import httpx2
import pytest

from mnemo.domain import MAX_TOKEN_BUDGET, new_id
from tests.helpers import extraction
from tests.server.api import ok
from tests.server.test_chat_support import ai  # noqa: F401 (a fixture, used by name)
from tests.server.test_turn_states import settled

pytestmark = pytest.mark.slow  # each test runs a real server

MODEL = "scripted-model"


def learning(scripted_llm) -> int:
    """The tokens the upstream reported for learning's requests (the proxy's chat left out)."""
    return sum(u["total_tokens"] for u in scripted_llm.usages if u["json"])


def tell(ai, scripted_llm, said: str, fact: str) -> str:  # noqa: F811
    """Say something through the chat proxy; the stored turn's id."""
    scripted_llm.reply("Noted.")
    scripted_llm.reply_json(extraction(fact))
    raw = ai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": said}]
    )
    return raw.headers["x-mnemo-turn"]


@contextmanager
def signed_in(client: httpx2.Client) -> Iterator[httpx2.Client]:
    """A client of the web page, signed in with `client`'s key."""
    with httpx2.Client(base_url=str(client.base_url), follow_redirects=True) as web:
        assert (
            web.post("/signin", data={"key": client.headers["authorization"].split()[1]}).status_code == 200
        )
        yield web


def next_midnight() -> str:
    now = datetime.now(UTC)
    return datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC).isoformat()


def test_tokens_of_each_turn_and_of_the_day_are_what_the_upstream_reported(
    ai,  # noqa: F811
    client,
    other,
    scripted_llm,
):
    first = settled(client, tell(ai, scripted_llm, "I have a cat named Miso", "I have a cat named Miso"))
    spent = learning(scripted_llm)
    assert first["state"] == "learnt" and spent > 0
    job = ok(client.get(f"/v1/jobs/{first['id']}"))
    assert job["result"]["tokens"]["total"] == spent and job["result"]["tokens"]["unreported_calls"] == 0
    usage = ok(client.get("/v1/me/usage"))
    assert usage["today"]["total_tokens"] == spent and usage["today"]["calls"] == 1
    assert usage["today"]["day"] == datetime.now(UTC).date().isoformat() == usage["days"][0]["day"]
    assert len(usage["days"]) == 30 and usage["days"][1]["total_tokens"] == 0
    assert (usage["daily_token_budget"], usage["own_budget"], usage["left_today"]) == (None, None, None)
    assert usage["resets_at"].startswith(next_midnight()[:10])
    # another person sees their own usage only
    assert ok(other.get("/v1/me/usage"))["today"]["total_tokens"] == 0

    # a reply that tells no usage: an unknown count, not zero tokens
    scripted_llm.send_usage = False
    second = settled(client, tell(ai, scripted_llm, "I live in Lisbon", "I live in Lisbon"))
    tokens = ok(client.get(f"/v1/jobs/{second['id']}"))["result"]["tokens"]
    assert tokens == {"prompt": 0, "completion": 0, "total": 0, "calls": 1, "unreported_calls": 1}
    today = ok(client.get("/v1/me/usage"))["today"]
    assert (today["total_tokens"], today["calls"], today["unreported_calls"]) == (spent, 2, 1)


def test_a_budget_holds_back_its_person_only_and_the_admin_sees_everyone(
    ai,  # noqa: F811
    client,
    other,
    admin,
    scripted_llm,
):
    me = ok(client.get("/v1/me"))["user"]["id"]
    set_to = ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 1}))
    assert (set_to["daily_token_budget"], set_to["own_budget"], set_to["left_today"]) == (1, 1, 1)
    crossing = settled(client, tell(ai, scripted_llm, "I have a cat named Miso", "I have a cat named Miso"))
    assert crossing["state"] == "learnt"
    spent = learning(scripted_llm)

    scripted_llm.reply("Noted.")
    raw = ai.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "I live in Lisbon"}]
    )
    waiting = raw.headers["x-mnemo-turn"]
    deadline = datetime.now(UTC) + timedelta(seconds=15)
    while (turn := ok(client.get(f"/v1/turns/{waiting}")))["state"] != "over_budget":
        assert turn["state"] in ("queued", "learning") and datetime.now(UTC) < deadline, turn
        time.sleep(0.05)
    assert turn["learn_at"] == next_midnight().replace("+00:00", "Z") and turn["attempts"] == 0
    listed = ok(client.get("/v1/turns", params={"state": "over_budget"}))["items"]
    assert [t["id"] for t in listed] == [waiting]
    assert learning(scripted_llm) == spent  # the model was not asked to learn it
    assert ok(client.get("/v1/me/usage"))["left_today"] == 0
    midnight = datetime.fromisoformat(next_midnight())
    with signed_in(client) as web:
        activity = web.get("/activity").text
        assert f"Over your daily token budget: learnt after {midnight:%Y-%m-%d %H:%M} UTC." in activity
        settings = web.get("/settings").text
        assert "<strong>1 token</strong>, 0 left today: your turns wait" in settings

    # the same server keeps learning for another person
    with httpx2.Client(base_url=str(client.base_url), headers=other.headers) as theirs:
        body = {
            "messages": [{"role": "user", "content": "I have a dog"}, {"role": "assistant", "content": "Ok"}]
        }
        scripted_llm.reply_json(extraction("I have a dog"))
        turn_id = ok(theirs.post("/v1/turns", json=body), 202)["job"]["id"]
        assert settled(theirs, turn_id)["state"] == "learnt"

    everyone = {u["name"]: u for u in ok(admin.get("/v1/admin/usage"))}
    assert len(everyone) == 2
    mine = next(u for u in everyone.values() if u["id"] == me)
    assert (mine["today_tokens"], mine["daily_token_budget"], mine["left_today"]) == (spent, 1, 0)
    theirs_row = next(u for u in everyone.values() if u["id"] != me)
    assert theirs_row["today_tokens"] > 0 and theirs_row["daily_token_budget"] is None

    # raising the budget learns the waiting turn at once
    scripted_llm.reply_json(extraction("I live in Lisbon"))
    raised = ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 1_000_000}))
    assert raised["left_today"] == 1_000_000 - spent
    assert settled(client, waiting)["state"] == "learnt"

    # the settings page shows the figures
    with signed_in(client) as web:
        page = web.get("/settings").text
    today = ok(client.get("/v1/me/usage"))["today"]["total_tokens"]
    assert f"<strong>{today} tokens</strong>" in page and "<strong>1000000 tokens</strong>" in page


@pytest.mark.parametrize(
    "body",
    [
        {"daily_token_budget": -1},
        {"daily_token_budget": MAX_TOKEN_BUDGET + 1},
        {"daily_token_budget": 10**30},
        {"daily_token_budget": 1.5},
        {"daily_token_budget": "100"},
        {"daily_token_budget": True},
        {},
        {"daily_token_budget": 5, "user_id": "someone"},
    ],
)
def test_an_invalid_budget_is_refused_and_changes_nothing(client, admin, body):
    me = ok(client.get("/v1/me"))["user"]["id"]
    ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 500}))
    reply = admin.put(f"/v1/admin/users/{me}/budget", json=body)
    assert reply.status_code == 422, reply.text
    assert "daily_token_budget" in reply.text or "user_id" in reply.text
    assert ok(client.get("/v1/me/usage"))["own_budget"] == 500


def test_budgets_are_the_administrators_and_follow_the_servers_default(client, other, admin):
    me = ok(client.get("/v1/me"))["user"]["id"]
    for caller in (client, other):
        assert caller.get("/v1/admin/usage").status_code == 403
        reply = caller.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 10**9})
        assert reply.status_code == 403
    assert ok(client.get("/v1/me/usage"))["own_budget"] is None
    assert admin.put(f"/v1/admin/users/{new_id()}/budget", json={"daily_token_budget": 1}).status_code == 404
    # null: back to the server's default (none here)
    ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 0}))
    cleared = ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": None}))
    assert (cleared["daily_token_budget"], cleared["own_budget"]) == (None, None)


class TestTheServersDefault:
    @pytest.fixture
    def server_settings(self, server_settings):
        write = server_settings.write.model_copy(update={"daily_token_budget": 1000})
        return server_settings.model_copy(update={"write": write})

    def test_a_person_gets_it_unless_given_more_or_less(self, client, other, admin):
        assert ok(client.get("/v1/me/usage"))["daily_token_budget"] == 1000
        me = ok(client.get("/v1/me"))["user"]["id"]
        above = ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 5000}))
        assert (above["daily_token_budget"], above["left_today"]) == (5000, 5000)
        below = ok(admin.put(f"/v1/admin/users/{me}/budget", json={"daily_token_budget": 10}))
        assert (below["daily_token_budget"], below["own_budget"]) == (10, 10)
        assert ok(other.get("/v1/me/usage"))["daily_token_budget"] == 1000


def test_the_usage_routes_are_in_the_api_docs(server):
    schema = ok(httpx2.get(f"{server.base_url}/openapi.json", timeout=60))
    assert {"/v1/me/usage", "/v1/admin/usage", "/v1/admin/users/{user_id}/budget"} <= set(schema["paths"])
    assert "over_budget" in str(schema["components"]["schemas"]["TurnState"])
