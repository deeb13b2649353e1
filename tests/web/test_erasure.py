"""Erasing more than one memory on the page: about a subject, ticked; all of one's data, typed."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.helpers import extraction
from tests.server.api import ok, texts, wait_for_job

pytestmark = pytest.mark.slow  # a real server and a browser


def test_erase_about_a_subject_shows_what_holds_it_and_erases_what_is_ticked(signed_in: Page, api, shoot):
    page = signed_in
    ok(
        api.post("/v1/turns", json={"messages": [{"role": "user", "content": "My sister moved to Berlin"}]}),
        202,
    )
    ok(api.post("/v1/memories", json={"text": "My sister lives in Berlin"}), 201)
    ok(api.post("/v1/memories", json={"text": "I was in Berlin in 2019"}), 201)
    ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    page.goto("/settings")
    page.get_by_role("link", name="Erase everything about a subject…").click()
    page.get_by_label("Its words (case and spacing aside)").fill("berlin")
    page.get_by_role("button", name="Show what holds them").click()
    expect(page.locator("fieldset").first).to_contain_text("2 memories")
    expect(page.locator("main")).to_contain_text("My sister moved to Berlin")
    expect(page.locator("main")).not_to_contain_text("Lisbon")
    shoot(page, "08-erase-about", narrow=True)

    page.get_by_role("button", name="Erase what is ticked").click()  # nothing ticked
    expect(page.locator(".flash")).to_contain_text("Tick at least one")
    page.get_by_label("My sister lives in Berlin").check()
    page.get_by_label("My sister moved to Berlin").check()
    page.get_by_role("button", name="Erase what is ticked").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    assert texts(ok(api.get("/v1/memories"))) == ["I live in Lisbon", "I was in Berlin in 2019"]


def test_erase_all_my_data_needs_the_typed_phrase_and_keeps_the_session(signed_in: Page, api, shoot):
    page = signed_in
    ok(api.post("/v1/memories", json={"text": "My bank PIN is 660311"}), 201)
    ok(api.post("/v1/me/keys", json={"name": "old phone"}), 201)
    page.goto("/settings")
    page.get_by_role("link", name="Erase all my data…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Erase all my data?")
    expect(page.locator("main")).to_contain_text("the text of 1 memory")
    shoot(page, "09-erase-everything", narrow=True)

    page.get_by_label("Type “erase everything” to confirm").fill("erase it all")
    page.get_by_role("button", name="Erase all my data").click()
    expect(page.locator(".flash")).to_contain_text("Nothing was erased")
    assert texts(ok(api.get("/v1/memories"))) == ["My bank PIN is 660311"]

    page.get_by_label("Type “erase everything” to confirm").fill("Erase everything")
    page.get_by_role("button", name="Erase all my data").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    expect(page.locator("main")).not_to_contain_text("660311")
    shoot(page, "10-erase-everything-receipt", narrow=True)
    page.goto("/settings")  # still signed in: the key in use stays
    expect(page.locator("main")).not_to_contain_text("old phone")
    assert ok(api.get("/v1/memories"))["items"] == []


def test_a_memorys_conversation_can_be_erased_with_or_without_what_was_learnt(
    signed_in: Page, api, llm, shoot
):
    page = signed_in
    llm.reply_json(extraction("I fly to Oslo on May 3"))
    said = {
        "conversation_id": "trip/2026 ü",
        "messages": [{"role": "user", "content": "Remember that I fly to Oslo on May 3"}],
    }
    turn = ok(api.post("/v1/turns", json=said), 202)["job"]
    learnt = wait_for_job(api, turn["id"])
    assert learnt["status"] == "done", learnt
    (fact,) = ok(api.get("/v1/memories"))["items"]
    page.goto(f"/memories/{fact['id']}")
    page.get_by_role("link", name="Erase this conversation…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Erase this conversation for good?")
    expect(page.locator("main")).to_contain_text("trip/2026 ü")
    expect(page.locator("fieldset")).to_contain_text("I fly to Oslo on May 3")
    shoot(page, "11-erase-conversation", narrow=True)
    page.get_by_role("button", name="Erase the conversation").click()  # the memory not ticked: it stays
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    assert texts(ok(api.get("/v1/memories"))) == [fact["text"]]
    page.goto(f"/memories/{fact['id']}")
    expect(page.locator("main")).not_to_contain_text("Remember that I fly")
    assert page.goto("/conversations/trip%2F2026%20%C3%BC/erase").status == 404  # gone
    assert page.goto("/conversations/%01/erase").status == 404
