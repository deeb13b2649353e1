"""The review queue: candidates with their source and confidence; approve, reject, edit then
approve, and the same in bulk."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.helpers import extraction
from tests.web.conftest import facts, ok

pytestmark = pytest.mark.slow  # a browser against a real server

SAID = "My cat Miso watches me play chess; I teach maths and I hate olives. My brother is Tom."
PROPOSED = [
    ("I have a cat named Miso", 0.9),
    ("I play chess", 0.8),
    ("I teach maths", 0.7),
    ("I hate olives", 0.6),
    ("My brother is Tom", 0.55),
]


def hold_candidates(api, llm) -> None:
    """The person's policy is review; one turn, from which the extractor proposes PROPOSED."""
    ok(api.patch("/v1/me/settings", json={"review_policy": "review"}))
    llm.reply_json(
        extraction(*({"text": t, "confidence": c, "speaker": "user", "message": 1} for t, c in PROPOSED))
    )
    body = {"messages": [{"role": "user", "content": SAID}, {"role": "assistant", "content": "Nice!"}]}
    job = ok(api.post("/v1/turns", json={**body, "conversation_id": "chat-42"}), 202)["job"]
    deadline = time.monotonic() + 15
    while ok(api.get(f"/v1/jobs/{job['id']}"))["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, "the extraction job did not finish"
        time.sleep(0.05)
    assert len(facts(api, "candidate")) == len(PROPOSED)


def status_of(api, text: str) -> str:
    return next(f["status"] for f in facts(api) if f["text"] == text)


def row(page: Page, text: str):
    return page.locator("li.candidate", has=page.get_by_text(text, exact=True))


def test_approve_reject_edit_then_approve_and_bulk(signed_in: Page, api, llm, shoot):
    hold_candidates(api, llm)
    page = signed_in
    page.reload()
    expect(page.locator("#waiting-count")).to_have_text("5 waiting")  # the Review tab's count
    page.get_by_role("link", name="Review").click()
    expect(page.locator("li.candidate")).to_have_count(5)
    miso = row(page, "I have a cat named Miso")
    expect(miso).to_contain_text("confidence 90%")
    expect(miso).to_contain_text("From something you said")
    expect(miso.locator("blockquote")).to_contain_text(SAID)  # the message it came from
    shoot(page, "07-review")

    miso.get_by_role("button", name="Approve").click()
    expect(page.locator(".flash")).to_contain_text("Approved “I have a cat named Miso”")
    assert status_of(api, "I have a cat named Miso") == "active"

    row(page, "I play chess").get_by_role("button", name="Reject").click()
    expect(page.locator(".flash")).to_contain_text("Rejected “I play chess”")
    assert status_of(api, "I play chess") == "rejected"

    maths = row(page, "I teach maths")
    maths.locator("summary").click()
    maths.get_by_label("Text").fill("I teach maths at a secondary school")
    maths.get_by_role("button", name="Save and approve").click()
    expect(page.locator(".flash")).to_contain_text("Approved, as edited")
    assert status_of(api, "I teach maths at a secondary school") == "active"
    expect(page.locator("li.candidate")).to_have_count(2)

    # bulk: tick both that are left and reject them together
    page.get_by_label("I hate olives").check()
    page.get_by_label("My brother is Tom").check()
    page.get_by_role("button", name="Reject ticked").click()
    expect(page.locator(".flash")).to_contain_text("Rejected 2.")
    assert status_of(api, "I hate olives") == "rejected" and status_of(api, "My brother is Tom") == "rejected"
    expect(page.locator(".empty")).to_have_text("Nothing is waiting for review.")

    # the approved, edited one tells its story: proposed by the extractor, edited and approved by you
    page.goto("/memories")
    page.get_by_role("link", name="I teach maths at a secondary school").click()
    timeline = page.locator("ol.timeline li")
    expect(timeline.nth(0)).to_contain_text("Created by the extractor")
    expect(timeline.nth(0).locator("blockquote")).to_contain_text(SAID)
    expect(timeline.nth(1)).to_contain_text("Edited by you")
    expect(timeline.nth(2)).to_contain_text("Approved by you")
    expect(page.locator("main")).to_contain_text("chat-42")
    shoot(page, "08-fact-from-conversation")


def test_bulk_approve_with_tick_all_and_an_empty_edit_is_refused(signed_in: Page, api, llm):
    hold_candidates(api, llm)
    page = signed_in
    page.goto("/review")
    olives = row(page, "I hate olives")
    olives.locator("summary").click()
    olives.get_by_label("Text").fill("  ")
    olives.get_by_role("button", name="Save and approve").click()
    expect(page.get_by_role("alert")).to_contain_text("cannot be empty")
    assert status_of(api, "I hate olives") == "candidate"

    page.get_by_label("Tick all").check()  # added by the page's script
    page.get_by_role("button", name="Approve ticked").click()
    expect(page.locator(".flash")).to_contain_text("Approved 5.")
    assert len(facts(api, "active")) == 5
