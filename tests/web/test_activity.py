"""Activity: each turn's state and what it taught, Retry for a failed one, the chart's numbers,
the banner while turns wait for a chat model, and Try it's "Memory updated"."""

from __future__ import annotations

import time

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect

from mnemo.domain import new_id
from tests.fakes.live_server import LiveServer
from tests.helpers import extraction
from tests.web.conftest import CHAT_REPLY, ok, sign_in, web_settings

pytestmark = pytest.mark.slow  # a browser against a real server


def settled(api, turn_id: str, *states: str) -> dict:
    deadline = time.monotonic() + 20
    while True:
        turn = ok(api.get(f"/v1/turns/{turn_id}"))
        if turn["state"] in states:
            return turn
        assert time.monotonic() < deadline, turn
        time.sleep(0.05)


def submit(api, said: str) -> str:
    body = {"messages": [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]}
    return ok(api.post("/v1/turns", json=body), 202)["job"]["id"]


def test_a_learnt_turn_links_what_it_taught_and_the_chart_counts_today(signed_in: Page, api, llm, shoot):
    page = signed_in
    llm.reply_json(extraction("I have a cat named Miso"))
    cat_turn = submit(api, "I have a cat named Miso.")
    (miso,) = settled(api, cat_turn, "learnt")["facts"]["created"]
    home = ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    ok(api.patch(f"/v1/memories/{home['id']}", json={"version": home["version"], "text": "I live in Porto"}))
    ok(api.patch("/v1/me/settings", json={"review_policy": "review"}))
    llm.reply_json(extraction("I play the cello"))
    cello_turn = submit(api, "I play the cello.")
    (cello,) = settled(api, cello_turn, "learnt")["facts"]["held"]
    quiet_turn = submit(api, "Thanks, that is all.")  # the extractor finds nothing in it
    settled(api, quiet_turn, "learnt")

    page.get_by_role("link", name="Activity").click()
    expect(page.get_by_role("heading", name="Activity", exact=True)).to_be_visible()
    rows = page.locator("ol.activity > li")
    expect(rows).to_have_count(3)  # newest first
    expect(rows.nth(0)).to_contain_text("Nothing new to remember.")
    expect(rows.nth(1).locator("dt")).to_have_text(["Held for review"])
    expect(rows.nth(1).get_by_role("link", name="I play the cello")).to_have_attribute(
        "href", f"/memories/{cello}"
    )
    # which turn is which: what was said first in it, its assistant, its conversation
    expect(rows.nth(1).locator(".said")).to_have_text("You said: “I play the cello.”")
    expect(rows.nth(1)).to_contain_text("Default assistant")
    conversation = rows.nth(1).get_by_role("link", name="conversation")
    cello_conversation = ok(api.get(f"/v1/turns/{cello_turn}"))["conversation_id"]
    expect(conversation).to_have_attribute("href", f"/conversation?id={cello_conversation}")
    expect(rows.nth(2).locator(".said-state")).to_have_text("Learnt.")
    expect(rows.nth(2).locator("dt")).to_have_text(["Learnt"])
    expect(rows.nth(2).get_by_role("link", name="I have a cat named Miso")).to_have_attribute(
        "href", f"/memories/{miso}"
    )
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.locator("#waiting-banner")).to_have_count(0)  # this server has a chat model

    ok(api.delete(f"/v1/memories/{miso}", params={"purge": "true"}))
    page.reload()
    expect(rows.nth(2).get_by_role("link", name="(erased)")).to_have_attribute("href", f"/memories/{miso}")
    expect(page.locator("ol.activity")).not_to_contain_text("Miso")
    expect(page.locator("#chart-totals")).to_have_text(
        "In the last 14 days: 2 learnt, 1 corrected, 1 held for review, 1 erased."
    )
    chart = page.get_by_role("img", name="What was learnt, corrected, held and erased each day")
    expect(chart).to_be_visible()
    table = page.locator("#chart-numbers")
    expect(table.locator("tbody tr")).to_have_count(14)
    today = table.locator("tbody tr").last
    expect(today.locator("td")).to_have_text(["2", "1", "1", "1"])
    expect(table.locator("tbody tr").first.locator("td")).to_have_text(["0", "0", "0", "0"])
    expect(page.locator("svg.chart rect")).to_have_count(4)  # today's four parts, no others
    shoot(page, "30-activity", narrow=True)


def test_a_failed_turn_is_retried_from_the_page(signed_in: Page, context, api, llm, shoot):
    page = signed_in
    llm.fail(400, "bad request")  # not worth trying again: the turn fails at once
    failed = submit(api, "I have a cat named Miso.")
    assert settled(api, failed, "failed")["reason"] == "refused_by_policy"
    page.goto("/activity")
    row = page.locator(f"#turn-{failed}")
    expect(row.locator(".said-state")).to_have_text("Failed: the chat model refused the request.")
    shoot(page, "31-activity-failed", narrow=True)
    stale = context.new_page()
    stale.goto("/activity")

    llm.reply_json(extraction("I have a cat named Miso"))
    row.get_by_role("button", name="Retry").click()
    expect(page.locator(".flash")).to_have_text("Queued again: it will be learnt from shortly.")
    (miso,) = settled(api, failed, "learnt")["facts"]["created"]
    page.reload()
    expect(row.get_by_role("link", name="I have a cat named Miso")).to_have_attribute(
        "href", f"/memories/{miso}"
    )
    expect(row.get_by_role("button", name="Retry")).to_have_count(0)

    # the page opened before the retry still offers it: nothing happens, and it says so
    stale.locator(f"#turn-{failed}").get_by_role("button", name="Retry").click()
    expect(stale.locator(".flash.error")).to_have_text(
        "Nothing was changed: that turn has not failed, so there is nothing to retry."
    )
    # a turn that is not this person's (or no one's) is not found
    before = ok(api.get(f"/v1/turns/{failed}"))
    stale.evaluate(
        """(id) => { const f = document.createElement('form'); f.method = 'post';
        f.action = '/activity/' + id + '/retry';
        f.innerHTML = '<input name=csrf value="' + document.querySelector('input[name=csrf]').value + '">';
        document.body.appendChild(f); f.submit(); }""",
        new_id(),
    )
    expect(stale.get_by_role("heading", name="Not found")).to_be_visible()
    assert ok(api.get(f"/v1/turns/{failed}")) == before


def test_without_a_chat_model_every_page_says_turns_wait(browser: Browser, tmp_path, shoot):
    with LiveServer(web_settings(tmp_path, None)) as live:
        context = browser.new_context(base_url=live.base_url)
        try:
            page = context.new_page()
            page.goto("/signin")
            expect(page.locator("#waiting-banner")).to_have_count(0)  # no one signed in yet
            sign_in(page, live.token)
            banner = page.locator("#waiting-banner")
            expect(banner).to_contain_text("No chat model is set up on this server, so your turns wait")
            headers = {"Authorization": f"Bearer {live.token}"}
            with httpx2.Client(base_url=live.base_url, headers=headers, timeout=30) as api:
                waiting = submit(api, "Remember that I live in Lisbon")
                (home,) = settled(api, waiting, "waiting_for_model")["facts"]["created"]
            for where in ("/review", "/settings", "/try", "/activity"):
                page.goto(where)
                expect(banner).to_contain_text("only what you ask to be remembered")
            row = page.locator(f"#turn-{waiting}")
            expect(row.locator(".said-state")).to_have_text(
                "Waiting for a chat model: only what you asked to be remembered was learnt."
            )
            expect(row.get_by_role("link", name="I live in Lisbon")).to_have_attribute(
                "href", f"/memories/{home}"
            )
            shoot(page, "32-activity-waiting-for-a-model", narrow=True)
        finally:
            context.close()


def test_try_it_says_what_memory_learnt_once_learning_settles(signed_in: Page, api, llm, shoot):
    page = signed_in
    llm.reply(CHAT_REPLY)  # the chat turn, then its extraction
    llm.reply_json(extraction("I have a cat named Miso"))
    page.get_by_role("link", name="Try it").click()
    page.get_by_label("Message").fill("I have a cat named Miso.")
    page.get_by_role("button", name="Send").click()
    note = page.locator("li.turn").nth(1).locator(".learnt-note")
    expect(note).to_contain_text("Memory updated: I have a cat named Miso")
    (job,) = ok(api.get("/v1/turns"))["items"]
    (miso,) = job["facts"]["created"]
    expect(note.get_by_role("link", name="I have a cat named Miso")).to_have_attribute(
        "href", f"/memories/{miso}"
    )
    expect(note).not_to_have_attribute("data-pending", "")
    shoot(page, "33-try-it-memory-updated")

    page.get_by_label("Message").fill("Thanks!")  # the next page load renders it at once
    page.get_by_role("button", name="Send").click()
    expect(page.locator("li.turn")).to_have_count(4)
    expect(page.locator("li.turn").nth(1).locator(".learnt-note")).to_contain_text(
        "Memory updated: I have a cat named Miso"
    )
    # a turn id that is not this person's says nothing and is not found
    assert page.request.get(f"/try/turns/{new_id()}").status == 404


def test_a_turn_shows_what_the_models_reply_dropped_and_why_never_the_text(server, api, llm):
    """Plain HTTP (no browser): a fact in a category mnemo does not know is learnt as other; an
    item with no text, or that is not an object, is named with its reason, never its words."""
    llm.reply_json(
        {
            "facts": [
                {"text": "I see a physiotherapist every week", "category": "health", "message": 1},
                {"category": "health", "confidence": 1},
                "My grandmother's ring is under the floorboard",
            ]
        }
    )
    turn = settled(api, submit(api, "Physio every week, and the ring."), "learnt")
    assert turn["dropped"] == {"no text": 1, "not an object": 1}
    [fact] = ok(api.get("/v1/memories"))["items"]
    assert fact["text"] == "I see a physiotherapist every week" and fact["category"] == "other"
    assert turn["facts"]["created"] == [fact["id"]]
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as client:
        signed = client.post("/signin", data={"key": server.token})
        assert signed.status_code == 200, signed.text
        activity = client.get("/activity")
    assert activity.status_code == 200
    row = activity.text.split(f'id="turn-{turn["id"]}"', 1)[1].split("</li>", 1)[0]
    assert "Not kept from the chat model&#39;s reply: no text (1), not an object (1)." in row
    assert "I see a physiotherapist every week" in row and "Nothing new to remember" not in row
    assert "grandmother" not in activity.text and "floorboard" not in activity.text
