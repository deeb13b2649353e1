"""The "Still true?" list over HTTP: the API lists what went unheard, keeps one (its clock starts
again), ends one now, and the person's switch turns the list off; the page does the same."""

from __future__ import annotations

import httpx2
import pytest

from mnemo.domain import utcnow
from tests.helpers import server_clock_back
from tests.server.api import ok

pytestmark = pytest.mark.slow  # a real server

PLAN = "I plan to learn the cello"


def test_the_list_offers_what_went_unheard_and_keeps_or_ends_it(server, client, other):
    with server_clock_back(server, 120):
        plan = ok(client.post("/v1/memories", json={"text": PLAN, "category": "plan"}), 201)
        trip = ok(
            client.post("/v1/memories", json={"text": "I plan a trip to Japan", "category": "plan"}), 201
        )
        ok(client.post("/v1/memories", json={"text": "My name is Alice", "category": "identity"}), 201)
        ok(other.post("/v1/memories", json={"text": "I plan to sell my car", "category": "plan"}), 201)
    ok(client.post("/v1/memories", json={"text": "I plan to paint the kitchen", "category": "plan"}), 201)
    listed = ok(client.get("/v1/memories/stale"))
    assert sorted(f["text"] for f in listed["items"]) == sorted([PLAN, "I plan a trip to Japan"])
    assert listed["review_stale"] is True
    assert listed["after_days"]["plan"] == 90 and listed["after_days"]["identity"] == 0
    assert [f["text"] for f in ok(other.get("/v1/memories/stale"))["items"]] == ["I plan to sell my car"]

    kept = ok(client.post(f"/v1/memories/{plan['id']}/keep"))
    assert (kept["version"], kept["mentions"], kept["status"]) == (2, 1, "active")
    history = ok(client.get(f"/v1/memories/{plan['id']}/history"))
    assert (history[-1]["action"], history[-1]["reason"]) == ("reinforce", "still true")
    ended = ok(
        client.patch(f"/v1/memories/{trip['id']}", json={"version": 1, "valid_to": utcnow().isoformat()})
    )
    assert ended["ended"] is True
    assert ok(client.get("/v1/memories/stale"))["items"] == []
    # keeping what has ended, or another person's memory, is refused and changes nothing
    refused = client.post(f"/v1/memories/{trip['id']}/keep")
    assert refused.status_code == 422 and "has ended" in refused.text
    theirs = ok(other.get("/v1/memories/stale"))["items"][0]
    assert client.post(f"/v1/memories/{theirs['id']}/keep").status_code == 404
    assert ok(other.get(f"/v1/memories/{theirs['id']}"))["version"] == 1


def test_the_switch_turns_the_list_off(server, client):
    with server_clock_back(server, 120):
        ok(client.post("/v1/memories", json={"text": PLAN, "category": "plan"}), 201)
    assert ok(client.get("/v1/me"))["review_stale"] is True
    off = ok(client.patch("/v1/me/settings", json={"review_stale": False}))
    assert off["review_stale"] is False
    listed = ok(client.get("/v1/memories/stale"))
    assert (listed["items"], listed["review_stale"]) == ([], False)
    assert client.patch("/v1/me/settings", json={"review_stale": None}).status_code == 422
    ok(client.patch("/v1/me/settings", json={"review_stale": True}))
    assert [f["text"] for f in ok(client.get("/v1/memories/stale"))["items"]] == [PLAN]


def _csrf(html: str) -> str:
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_the_page_offers_keep_end_and_erase(server, client):
    with server_clock_back(server, 120):
        plan = ok(client.post("/v1/memories", json={"text": PLAN, "category": "plan"}), 201)
        trip = ok(
            client.post("/v1/memories", json={"text": "I plan a trip to <Japan>", "category": "plan"}), 201
        )
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as page:
        assert page.post("/signin", data={"key": server.token}).status_code == 200
        review = page.get("/review")
        assert 'href="/review/stale"' in review.text and "2 memories unheard for long" in review.text
        shown = page.get("/review/stale")
        assert PLAN in shown.text and "I plan a trip to &lt;Japan&gt;" in shown.text
        assert f'href="/memories/{plan["id"]}/purge"' in shown.text  # erase goes through its preview
        csrf = _csrf(shown.text)
        kept = page.post(f"/review/stale/{plan['id']}", data={"csrf": csrf, "action": "keep", "version": "1"})
        assert kept.status_code == 200 and f"Kept “{PLAN}”" in kept.text
        assert f'id="s-{plan["id"]}"' not in kept.text
        ended = page.post(f"/review/stale/{trip['id']}", data={"csrf": csrf, "action": "end", "version": "1"})
        assert (
            "Ended “I plan a trip to &lt;Japan&gt;”" in ended.text
            and "Nothing has gone unheard" in ended.text
        )
        # a stale version is refused and changes nothing; an unknown action too
        again = page.post(f"/review/stale/{plan['id']}", data={"csrf": csrf, "action": "end", "version": "1"})
        assert "changed meanwhile" in again.text
        assert ok(client.get(f"/v1/memories/{plan['id']}"))["valid_to"] is None
        odd = page.post(f"/review/stale/{plan['id']}", data={"csrf": csrf, "action": "shred"})
        assert "Choose keep or end." in odd.text
        # no CSRF token: refused
        assert page.post(f"/review/stale/{plan['id']}", data={"action": "keep"}).status_code == 403
        # the switch in Settings
        settings = page.get("/settings")
        assert 'id="stale-heading"' in settings.text
        off = page.post("/settings/stale", data={"csrf": _csrf(settings.text), "stale": "off"})
        assert "list is off" in off.text
        assert 'id="stale-off"' in page.get("/review/stale").text
        assert "The list is off." in page.get("/review").text
        # ending needs the version it was shown at
        page.post("/settings/stale", data={"csrf": csrf, "stale": "on"})
        bare = page.post(f"/review/stale/{plan['id']}", data={"csrf": csrf, "action": "end"})
        assert "The form was incomplete" in bare.text
        assert ok(client.get(f"/v1/memories/{plan['id']}"))["valid_to"] is None
        page.post("/settings/stale", data={"csrf": csrf, "stale": "off"})
    assert ok(client.get("/v1/me"))["review_stale"] is False
    assert ok(client.get(f"/v1/memories/{trip['id']}"))["ended"] is True
