"""After a correction, an end or a retraction the page confirms it with an Undo button, which
takes the change back while nothing changed the memory since; after, it says so and changes
nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import ok

pytestmark = pytest.mark.slow  # a browser against a real server


def test_undo_takes_back_a_correction_an_end_and_a_retraction(signed_in: Page, api, shoot):
    fact = ok(api.post("/v1/memories", json={"text": "I live in Lisbon", "category": "identity"}), 201)
    page = signed_in
    page.goto(f"/memories/{fact['id']}")
    page.get_by_label("Text").fill("I live in Porto")
    page.get_by_role("button", name="Save correction").click()
    flash = page.locator(".flash")
    expect(flash).to_contain_text("Corrected")
    shoot(page, "50-undo")
    flash.get_by_role("button", name="Undo").click()
    expect(flash).to_contain_text("Undone")
    expect(page.locator("h1")).to_have_text("I live in Lisbon")
    undone = ok(api.get(f"/v1/memories/{fact['id']}"))
    assert (undone["text"], undone["category"], undone["version"]) == ("I live in Lisbon", "identity", 3)
    history = ok(api.get(f"/v1/memories/{fact['id']}/history"))
    assert [e["reason"] for e in history][-1] == "undone"

    page.locator("#end-until").fill("2020-01-05")
    page.get_by_role("button", name="Save its end").click()
    expect(page.locator("#ended")).to_be_visible()
    flash.get_by_role("button", name="Undo").click()
    expect(flash).to_contain_text("Undone")
    expect(page.locator("#ended")).to_have_count(0)
    assert ok(api.get(f"/v1/memories/{fact['id']}"))["valid_to"] is None

    page.get_by_role("button", name="Retract").click()
    expect(flash).to_contain_text("Retracted")
    flash.get_by_role("button", name="Undo").click()
    expect(flash).to_contain_text("Undone")
    assert ok(api.get(f"/v1/memories/{fact['id']}"))["status"] == "active"

    # an undo after another change changes nothing, and says so
    page.get_by_label("Text").fill("I live in Faro")
    page.get_by_role("button", name="Save correction").click()
    expect(flash).to_contain_text("Corrected")
    moved_on = ok(api.get(f"/v1/memories/{fact['id']}"))
    ok(api.patch(f"/v1/memories/{fact['id']}", json={"version": moved_on["version"], "category": "other"}))
    flash.get_by_role("button", name="Undo").click()
    expect(flash).to_contain_text("Nothing was undone")
    after = ok(api.get(f"/v1/memories/{fact['id']}"))
    assert (after["text"], after["category"]) == ("I live in Faro", "other")


def test_undo_takes_back_an_approval_and_the_memory_waits_for_review_again(signed_in: Page, api, llm):
    from tests.web.test_review import PROPOSED, hold_candidates, row

    hold_candidates(api, llm)
    page = signed_in
    page.goto("/review")
    text = PROPOSED[0][0]
    row(page, text).get_by_role("button", name="Approve").click()
    flash = page.locator(".flash")
    expect(flash).to_contain_text("Approved")
    assert next(f["status"] for f in ok(api.get("/v1/memories"))["items"] if f["text"] == text) == "active"
    flash.get_by_role("button", name="Undo").click()
    expect(flash).to_contain_text("Undone: it waits for your review again.")
    expect(row(page, text)).to_have_count(1)  # back on the Review page, waiting
    held = ok(api.get("/v1/review"))["items"]
    assert text in [f["text"] for f in held]
    history = ok(api.get(f"/v1/memories/{next(f['id'] for f in held if f['text'] == text)}/history"))
    assert [(e["action"], e["reason"]) for e in history][-2:] == [("approve", None), ("unapprove", "undone")]
