"""The conversations page: the list (found by words, by assistant, by date), one conversation read
whole with what each turn taught and a way to erase it, in Chromium at 1280 and 375 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import ok
from tests.web.test_review import PROPOSED, SAID, hold_candidates

pytestmark = pytest.mark.slow  # a browser against a real server


def test_the_list_a_conversation_and_its_erase_link(signed_in: Page, api, llm, shoot):
    hold_candidates(api, llm)  # conversation chat-42: five memories held for review
    body = {"messages": [{"role": "user", "content": "What time is it in <Lima>?"}]}
    ok(api.post("/v1/turns", json={**body, "conversation_id": "../x/erase"}), 202)
    page = signed_in
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("link", name="Conversations").click()
    expect(page.get_by_role("heading", name="Conversations", exact=True)).to_be_visible()
    rows = page.locator("#conversations > li")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("What time is it in <Lima>?")  # newest first, as text
    expect(rows.nth(1)).to_contain_text(SAID)
    expect(rows.nth(1)).to_contain_text("2 messages")
    shoot(page, "20-conversations", narrow=True)

    page.get_by_label("Words said").fill("olives")
    page.get_by_role("button", name="Show").click()
    expect(rows).to_have_count(1)
    page.get_by_label("Words said").fill("Porto")
    page.get_by_role("button", name="Show").click()
    expect(page.locator(".empty")).to_contain_text("No conversation matches")
    page.get_by_label("Words said").fill("")
    page.get_by_label("From").fill("2999-01-01")
    page.get_by_role("button", name="Show").click()
    expect(page.locator(".empty")).to_contain_text("No conversation matches")

    page.goto("/conversations")
    rows.nth(1).get_by_role("link").click()
    expect(page.get_by_role("heading", name="Conversation", exact=True)).to_be_visible()
    expect(page.locator("#messages blockquote").first).to_contain_text(SAID)
    note = page.locator(".turn-note")
    expect(note).to_contain_text("Held for review")
    taught = page.locator("#taught li")
    expect(taught).to_have_count(len(PROPOSED))
    shoot(page, "21-conversation", narrow=True)
    taught.get_by_role("link", name=PROPOSED[0][0]).click()
    expect(page.locator("h1")).to_have_text(PROPOSED[0][0])
    page.go_back()
    page.get_by_role("link", name="Erase this conversation…").click()
    expect(page.get_by_role("heading", name="Erase this conversation for good?")).to_be_visible()

    # an id with a slash, dots or "/erase" in it reads back; an unknown one, or one no id can
    # be (a NUL), is not found; the last day there is is a day to filter by
    page.goto("/conversations")
    rows.nth(0).get_by_role("link").click()
    expect(page.locator("#messages")).to_contain_text("What time is it in <Lima>?")
    page.get_by_role("link", name="Erase this conversation…").click()
    expect(page.locator("code").first).to_have_text("../x/erase")
    page.get_by_role("button", name="Erase the conversation").click()
    expect(page.get_by_role("heading", name="Receipt of an erasure")).to_be_visible()
    assert ok(api.get("/v1/conversations"))["items"][0]["id"] == "chat-42"
    assert page.goto("/conversation?id=nope").status == 404
    assert page.goto("/conversation?id=a%00b").status == 404
    assert page.goto("/conversations?to=9999-12-31").status == 200


def test_the_list_pages_with_its_filters_kept(server, api):
    import httpx2

    for i in range(27):
        body = {"messages": [{"role": "user", "content": f"Tea number {i}"}], "conversation_id": f"c{i:02}"}
        ok(api.post("/v1/turns", json=body), 202)
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as browser:
        assert browser.post("/signin", data={"key": server.token}).status_code == 200
        first = browser.get("/conversations", params={"q": "tea"}).text
        assert first.count('class="fact"') == 25 and "/conversations?q=tea&amp;offset=25" in first
        second = browser.get("/conversations", params={"q": "tea", "offset": 25}).text
        assert second.count('class="fact"') == 2 and "Older" not in second and "offset=0" in second
