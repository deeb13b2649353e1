"""A memory's end over HTTP: set when it is added, shown as ended once past, cleared or moved by
a PATCH (null clears it), refused before its start; the page shows it and sets it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx2
import pytest

from tests.server.api import ok

pytestmark = pytest.mark.slow  # a real server


def test_an_end_is_set_shown_cleared_and_moved(client):
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    fact = ok(client.post("/v1/memories", json={"text": "I am in Lisbon this week", "valid_to": past}), 201)
    assert fact["ended"] is True and fact["valid_to"].startswith(past[:10])
    assert not any(
        h["fact"]["id"] == fact["id"]
        for h in ok(client.post("/v1/memories/search", json={"query": "Lisbon"}))["items"]
    )
    cleared = ok(client.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "valid_to": None}))
    assert (cleared["ended"], cleared["valid_to"], cleared["version"]) == (False, None, 2)
    assert any(
        h["fact"]["id"] == fact["id"]
        for h in ok(client.post("/v1/memories/search", json={"query": "Lisbon"}))["items"]
    )
    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    moved = ok(client.patch(f"/v1/memories/{fact['id']}", json={"version": 2, "valid_to": later}))
    assert moved["ended"] is False and moved["valid_to"].startswith(later[:10])
    # a PATCH that names nothing is refused; an end before the start too, nothing changed
    assert client.patch(f"/v1/memories/{fact['id']}", json={"version": 3}).status_code == 422
    started = ok(client.post("/v1/memories", json={"text": "I train daily", "valid_from": later}), 201)
    refused = client.patch(f"/v1/memories/{started['id']}", json={"version": 1, "valid_to": past})
    assert refused.status_code == 422 and "valid_to must be after valid_from" in refused.text
    assert ok(client.get(f"/v1/memories/{started['id']}"))["valid_to"] is None


def test_the_page_shows_an_ended_memory_and_sets_its_end(server, client):
    past = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    fact = ok(client.post("/v1/memories", json={"text": "I am in Lisbon this week", "valid_to": past}), 201)
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as page:
        assert page.post("/signin", data={"key": server.token}).status_code == 200
        shown = page.get(f"/memories/{fact['id']}")
        assert 'id="ended"' in shown.text and "no longer recalled as true now" in shown.text
        assert 'id="ended-entry"' in shown.text  # the history reads the end as the event it is
        form = page.get(f"/memories/{fact['id']}").text
        csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        day = (datetime.now(UTC) + timedelta(days=5)).date().isoformat()
        saved = page.post(f"/memories/{fact['id']}/end", data={"csrf": csrf, "version": "1", "until": day})
        assert saved.status_code == 200 and f"It holds until the end of {day}." in saved.text
        assert 'id="ended"' not in saved.text and 'id="ended-entry"' not in saved.text
        assert (
            f"true until {(datetime.fromisoformat(day) + timedelta(days=1)).date().isoformat()}" in saved.text
        )
    after = ok(client.get(f"/v1/memories/{fact['id']}"))
    assert after["ended"] is False and after["valid_to"].startswith(
        (datetime.fromisoformat(day) + timedelta(days=1)).date().isoformat()
    )
