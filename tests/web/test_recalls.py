"""A memory's page says which assistant last recalled it, when, and how often this week; the
settings page turns the recall log off (and deletes it)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import ok

pytestmark = pytest.mark.slow  # a browser against a real server


def test_the_fact_page_says_who_recalled_it_and_the_switch_deletes_it(signed_in: Page, api, shoot):
    page = signed_in
    chef = ok(api.post("/v1/agents", json={"name": "Chef", "reads_default": True}), 201)
    fact = ok(api.post("/v1/memories", json={"text": "I cook risotto on Fridays"}), 201)
    quiet = ok(api.post("/v1/memories", json={"text": "My bicycle is green"}), 201)
    for _ in range(2):  # the default assistant twice, then Chef: the last one is named
        ok(api.post("/v1/memories/search", json={"query": "risotto on Fridays", "limit": 1}))
    ok(api.post("/v1/memories/search", json={"query": "risotto Fridays", "agent_id": chef["id"], "limit": 1}))
    ok(api.get("/v1/memories", params={"q": "bicycle"}))  # the person's own look: not a recall

    page.goto(f"/memories/{fact['id']}")
    expect(page.locator("#recalled")).to_have_text(
        "Last recalled by Chef just now, 3 times in the last 7 days."
    )
    shoot(page, "recalls-fact", narrow=True)
    page.goto(f"/memories/{quiet['id']}")
    expect(page.locator("#recalled")).to_have_text("Not recalled by an assistant in the last 7 days.")

    page.goto("/settings")
    page.get_by_label("Off: record nothing, and delete what was recorded").check()
    page.get_by_role("button", name="Save recall log").click()
    expect(page.locator(".flash")).to_contain_text("no longer recorded")
    assert ok(api.get("/v1/me"))["record_recalls"] is False
    assert ok(api.get(f"/v1/memories/{fact['id']}/recalls"))["last"] is None
    page.goto(f"/memories/{fact['id']}")
    expect(page.locator("main")).to_contain_text("I cook risotto on Fridays")
    expect(page.locator("#recalled")).to_have_count(0)
