"""Try it: a chat through the proxy, what was recalled for each reply, and memory switched off."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fakes.live_server import LiveServer
from tests.helpers import fill_the_disk
from tests.web.conftest import CHAT_REPLY, facts, ok, sign_in, web_settings

pytestmark = pytest.mark.slow  # a browser against a real server


def proxied(llm) -> list[dict]:
    """The chat requests the upstream received (not the extractor's, which ask for JSON)."""
    return [r for r in llm.chat_requests() if not r.get("response_format")]


def settled_jobs(api, count: int) -> list[dict]:
    deadline = time.monotonic() + 15
    while True:
        jobs = ok(api.get("/v1/jobs"))["items"]
        if len(jobs) == count and all(j["status"] in ("done", "failed") for j in jobs):
            assert all(j["status"] == "done" for j in jobs), jobs
            return jobs
        assert len(jobs) <= count and time.monotonic() < deadline, jobs
        time.sleep(0.05)


def send(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def test_a_reply_with_its_recalled_memories_then_memory_off_changes_nothing(signed_in: Page, api, llm, shoot):
    page = signed_in
    sister = ok(api.post("/v1/memories", json={"text": "My sister Ana lives in Porto"}), 201)
    page.get_by_role("link", name="Try it").click()
    send(page, "Where does my sister Ana live?")
    turns = page.locator("li.turn")
    expect(turns).to_have_count(2)
    expect(turns.nth(1).locator(".said")).to_have_text(CHAT_REPLY)
    recalled = turns.nth(1).get_by_role("complementary", name="Recalled for this reply")
    expect(recalled.get_by_role("link", name="My sister Ana lives in Porto")).to_have_attribute(
        "href", f"/memories/{sister['id']}"
    )
    (forwarded,) = proxied(llm)
    assert "My sister Ana lives in Porto" in forwarded["messages"][0]["content"]  # the system message
    assert forwarded["messages"][-1] == {"role": "user", "content": "Where does my sister Ana live?"}
    (job,) = settled_jobs(api, 1)  # the turn was stored and learnt from

    send(page, "Thanks!")  # the same conversation goes on
    expect(turns).to_have_count(4)
    second = proxied(llm)[1]["messages"]
    assert [m["content"] for m in second if m["role"] == "assistant"] == [CHAT_REPLY]
    (again, _) = settled_jobs(api, 2)
    assert again["conversation_id"] == job["conversation_id"]
    shoot(page, "11-try-it")

    # memory off: nothing recalled, nothing stored, nothing learnt
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Off", exact=True).check()
    page.get_by_role("button", name="Save switch").click()
    expect(page.locator(".flash")).to_contain_text("Memory is now off")
    before = (facts(api), ok(api.get("/v1/audit", params={"limit": 200}))["items"])
    page.get_by_role("link", name="Try it").click()
    expect(page.locator(".notice").first).to_contain_text("Memory is off for you")
    send(page, "My sister Ana moved to Madrid, remember that.")
    expect(turns.nth(1).locator(".said")).to_have_text(CHAT_REPLY)
    expect(turns.nth(1).locator(".recalled")).to_contain_text("Nothing.")
    forwarded = proxied(llm)[-1]
    assert forwarded["messages"] == [
        {"role": "user", "content": "My sister Ana moved to Madrid, remember that."}
    ]
    time.sleep(0.5)  # give a (wrongly) queued job time to show
    settled_jobs(api, 2)
    assert (facts(api), ok(api.get("/v1/audit", params={"limit": 200}))["items"]) == before
    shoot(page, "12-try-it-memory-off")


def test_without_an_upstream_model_the_page_says_so(browser: Browser, tmp_path, shoot):
    with LiveServer(web_settings(tmp_path, None)) as live:
        context = browser.new_context(base_url=live.base_url)
        try:
            page = context.new_page()
            sign_in(page, live.token)
            page.goto("/try")
            expect(page.get_by_role("alert")).to_contain_text("No upstream model is configured")
            expect(page.get_by_role("button", name="Send")).to_be_disabled()
            shoot(page, "13-try-it-no-model")
        finally:
            context.close()


def test_a_turn_not_stored_on_a_full_disk_says_so(signed_in: Page, api, server, llm):
    """The reply still comes; the page says the turn was not stored to learn from."""
    assert fill_the_disk(server, api).status_code == 507
    page = signed_in
    page.get_by_role("link", name="Try it").click()
    send(page, "I keep a diary of long days. " * 250)
    expect(page.locator("li.turn").nth(1).locator(".said")).to_have_text(CHAT_REPLY)
    expect(page.get_by_role("alert")).to_contain_text("not stored to learn from: storage is full")
    assert ok(api.get("/v1/jobs"))["items"] == []


def test_a_reply_holding_a_lone_surrogate_is_shown_and_stored(signed_in: Page, api, llm):
    """What no page can hold is shown as U+FFFD; the turn was stored, and the page says nothing
    went wrong."""
    llm.reply("Odd \ud800 reply")
    llm.reply_json({"facts": []})  # the turn's extraction
    page = signed_in
    page.get_by_role("link", name="Try it").click()
    send(page, "Hello")
    expect(page.locator("li.turn").nth(1).locator(".said")).to_have_text("Odd \ufffd reply")
    expect(page.get_by_role("alert")).to_have_count(0)
    assert len(settled_jobs(api, 1)) == 1
