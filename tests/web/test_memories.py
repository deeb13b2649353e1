"""Sign in, add a memory, correct it, read its history, retract and restore it, erase it, audit."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import facts, ok

pytestmark = pytest.mark.slow  # a browser against a real server


def test_sign_in_refuses_a_wrong_key_and_the_admin_key_then_lets_the_person_in(page: Page, server, shoot):
    page.goto("/memories")
    expect(page).to_have_url(re.compile(r"/signin\?next=%2Fmemories$"))
    shoot(page, "01-signin")

    page.get_by_label("API key").fill("mnemo_0123456789abcdef_not-a-real-secret-at-all")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unknown or was revoked")

    page.get_by_label("API key").fill("test-admin-key-0123456789")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("admin key")
    assert not page.context.cookies()  # nothing was set

    page.get_by_label("API key").fill(server.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/memories$"))  # back where it was going
    (cookie,) = page.context.cookies()
    assert cookie["name"] == "mnemo_session" and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/" and not cookie["secure"]  # plain http on loopback
    assert page.evaluate("document.cookie") == ""  # scripts cannot read it

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("signed out")
    assert not page.context.cookies()
    page.goto("/memories")
    expect(page).to_have_url(re.compile(r"/signin"))


def test_add_edit_history_retract_restore(signed_in: Page, api, shoot):
    page = signed_in
    page.get_by_label("What should your assistants know?").fill("I live in Lisbon")
    page.get_by_label("Category").first.select_option("identity")
    page.get_by_role("button", name="Remember this").click()
    expect(page.locator(".flash")).to_contain_text("Remembered: “I live in Lisbon”")
    expect(page.locator("ol.facts")).to_contain_text("I live in Lisbon")
    (added,) = facts(api)
    assert added["text"] == "I live in Lisbon" and added["category"] == "identity"
    shoot(page, "02-memories")

    # edit in place, from the list's menu
    row = page.locator(f"#fact-{added['id']}")
    row.get_by_text("Actions").click()
    row.get_by_role("link", name="Edit…").click()
    page.get_by_label("Text").fill("I live in Porto")
    page.get_by_role("button", name="Save correction").click()
    expect(page.locator(".flash")).to_contain_text("Corrected")
    (edited,) = facts(api)
    assert edited["id"] == added["id"] and edited["text"] == "I live in Porto" and edited["version"] == 2
    page.goto("/memories")
    expect(page.locator("ol.facts")).to_contain_text("I live in Porto")

    # its page: the history, with who and what
    page.get_by_role("link", name="I live in Porto").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("I live in Porto")
    timeline = page.locator("ol.timeline")
    expect(timeline.locator("li")).to_have_count(2)
    expect(timeline.locator("li").nth(0)).to_contain_text("Created by you")
    expect(timeline.locator("li").nth(1)).to_contain_text("Edited by you")
    expect(timeline.locator("li").nth(1).locator("del")).to_have_text("I live in Lisbon")
    expect(timeline.locator("li").nth(1).locator("ins")).to_have_text("I live in Porto")
    shoot(page, "03-fact")

    # retract, then restore
    page.get_by_role("button", name="Retract").click()
    expect(page.locator(".flash")).to_contain_text("Retracted")
    expect(page.locator(".meta .badge").first).to_have_text("retracted")
    assert facts(api, "active") == []
    page.get_by_role("button", name="Restore").click()
    expect(page.locator(".flash")).to_contain_text("Restored")
    expect(page.locator(".meta .badge").first).to_have_text("active")
    assert [f["text"] for f in facts(api, "active")] == ["I live in Porto"]
    expect(timeline.locator("li")).to_have_count(4)
    expect(timeline.locator("li").nth(2)).to_contain_text("Retracted by you")
    expect(timeline.locator("li").nth(3)).to_contain_text("Restored by you")
    shoot(page, "04-fact-history")


def test_a_stale_edit_keeps_what_was_typed_and_says_why(signed_in: Page, api):
    page = signed_in
    fact = ok(api.post("/v1/memories", json={"text": "I play the cello"}), 201)
    page.goto(f"/memories/{fact['id']}")
    ok(api.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "text": "I play the viola"}))
    page.get_by_label("Text").fill("I play the double bass")
    page.get_by_role("button", name="Save correction").click()
    expect(page.get_by_role("alert")).to_contain_text("changed since you opened it")
    expect(page.get_by_label("Text")).to_have_value("I play the double bass")  # nothing lost
    assert facts(api)[0]["text"] == "I play the viola"
    page.get_by_role("button", name="Save correction").click()  # now against the version it saw
    expect(page.get_by_role("heading", level=1)).to_have_text("I play the double bass")

    page.get_by_label("Text").fill("   ")
    page.get_by_role("button", name="Save correction").click()
    expect(page.get_by_role("alert")).to_contain_text("cannot be empty")
    assert facts(api)[0]["text"] == "I play the double bass"


def test_a_correction_to_another_memorys_text_says_so_and_does_not_loop(signed_in: Page, api):
    """A correction that would make two memories say the same thing is refused with its own
    reason, not "changed since you opened it" (which saving again would only repeat)."""
    page = signed_in
    ok(api.post("/v1/memories", json={"text": "I play the viola"}), 201)
    fact = ok(api.post("/v1/memories", json={"text": "I play the cello"}), 201)
    page.goto(f"/memories/{fact['id']}")
    for _ in range(2):
        page.get_by_label("Text").fill("I play the viola")
        page.get_by_role("button", name="Save correction").click()
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("Another of your memories already says this")
        expect(alert).not_to_contain_text("changed since you opened it")
        expect(page.get_by_label("Text")).to_have_value("I play the viola")  # nothing lost
    assert sorted(f["text"] for f in facts(api)) == ["I play the cello", "I play the viola"]


def test_search_filters_and_paging(signed_in: Page, api):
    page = signed_in
    for i in range(30):
        ok(api.post("/v1/memories", json={"text": f"My locker number {i} is blue"}), 201)
    ok(
        api.post(
            "/v1/memories", json={"text": "I am allergic to peanuts", "category": "identity", "pinned": True}
        ),
        201,
    )
    page.goto("/memories")
    expect(page.locator("li.fact")).to_have_count(25)
    page.get_by_role("link", name="Older →").click()
    expect(page.locator("li.fact")).to_have_count(6)

    page.get_by_label("Pinned", exact=True).select_option("yes")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("li.fact")).to_have_count(1)
    expect(page.locator("li.fact")).to_contain_text("peanuts")

    page.goto("/memories")
    page.get_by_role("searchbox", name="Search").fill("peanut allergy")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("li.fact").first).to_contain_text("allergic to peanuts")

    page.goto("/memories?category=identity")
    expect(page.locator("li.fact")).to_have_count(1)
    page.goto("/memories?status=retracted")
    expect(page.locator(".empty")).to_have_text("No memories here yet.")
    page.goto("/memories?status=nonsense&offset=-5&pinned=maybe")  # nonsense filters: the defaults
    expect(page.locator("li.fact")).to_have_count(25)


def test_purge_says_what_it_erases_and_the_chain_still_verifies(signed_in: Page, api, shoot):
    page = signed_in
    fact = ok(api.post("/v1/memories", json={"text": "My bank PIN hint is my cat's birthday"}), 201)
    ok(
        api.patch(
            f"/v1/memories/{fact['id']}", json={"version": 1, "text": "My PIN hint is the cat's birthday"}
        )
    )
    page.goto(f"/memories/{fact['id']}")
    page.get_by_role("link", name="Erase…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Erase this memory for good?")
    expect(page.locator("blockquote")).to_have_text("My PIN hint is the cat's birthday")
    expect(page.locator("main")).to_contain_text("from all 2 events of its history")
    expect(page.locator("main")).to_contain_text("cannot be undone")
    shoot(page, "05-purge-confirm", narrow=True)

    page.get_by_label("Reason (optional, kept in the history)").fill("too personal")
    page.get_by_role("button", name="Erase it").click()
    expect(page.locator(".flash")).to_contain_text("Erased")
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    expect(page.locator("pre.receipt")).to_contain_text(fact["id"])
    expect(page.locator("main")).not_to_contain_text("PIN")
    shoot(page, "05-purge-receipt", narrow=True)
    assert "PIN" not in json.dumps(ok(api.get(f"/v1/memories/{fact['id']}/history")))
    assert ok(api.get("/v1/audit/verify"))["ok"]

    page.goto(f"/memories/{fact['id']}")
    expect(page.get_by_role("heading", level=1)).to_have_text("(erased)")
    expect(page.locator("main")).not_to_contain_text("PIN")
    expect(page.locator("ol.timeline li").last).to_contain_text("Erased by you")


def test_the_erase_page_names_the_messages_that_go_and_shows_the_receipt(signed_in: Page, api, shoot):
    """A message that says the memory in the same words goes with it: the page says so first,
    and the receipt counts it."""
    page = signed_in
    said = "I hate coriander and I cook every Sunday"
    turn = ok(
        api.post(
            "/v1/turns", json={"conversation_id": "kitchen", "messages": [{"role": "user", "content": said}]}
        ),
        202,
    )
    assert turn["queued"]
    spice = ok(api.post("/v1/memories", json={"text": "I hate coriander"}), 201)
    page.goto(f"/memories/{spice['id']}/purge")
    expect(page.locator("#erased-messages legend")).to_have_text("1 conversation message")
    expect(page.locator("#erased-messages blockquote")).to_have_text(said)
    page.get_by_role("button", name="Erase it").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    expect(page.locator("main")).to_contain_text("1 memory, 1 message;")
    shoot(page, "05-erasure-receipt", narrow=True)


LETTER = (
    "Here is my whole cover letter. "
    + "I led the billing migration. " * 100
    + "I hate coriander, by the way. "
    + "We shipped on time. " * 100
)


def test_the_erase_page_shows_each_message_where_it_is_and_erases_what_stays_ticked(
    signed_in: Page, api, shoot
):
    """The short message that says the memory is ticked, the 4,961-character letter that says it
    in passing is shown by an excerpt and not ticked, and the same text in another assistant's
    memory is offered: the person unticks the first, ticks the others, and the erasure follows."""
    page = signed_in
    for conversation, said in (("short", "I hate coriander!"), ("letter", LETTER)):
        turn = {"conversation_id": conversation, "messages": [{"role": "user", "content": said}]}
        ok(api.post("/v1/turns", json=turn), 202)
    chef = ok(api.post("/v1/agents", json={"name": "Chef", "private": True}), 201)
    spice = ok(api.post("/v1/memories", json={"text": "I hate coriander"}), 201)
    ok(api.post("/v1/memories", json={"text": "I hate coriander", "agent_id": chef["id"]}), 201)

    page.goto(f"/memories/{spice['id']}/purge")
    short = page.get_by_label(
        re.compile(r"Erase: user message in conversation short, .*17 characters \(says it\)")
    )
    letter = page.get_by_label(
        re.compile(r"Erase too: user message in conversation letter, .*4,961 characters")
    )
    expect(short).to_be_checked()
    expect(letter).not_to_be_checked()
    quoted = page.locator("#erased-messages blockquote")
    expect(quoted.first).to_have_text("I hate coriander!")
    expect(quoted.last).to_contain_text("I hate coriander, by the way.")
    assert len(quoted.last.inner_text()) < 300  # an excerpt, not the letter
    expect(page.locator("#other-agents")).to_contain_text("I hate coriander (Chef)")
    shoot(page, "05-purge-messages", narrow=True)

    short.uncheck()
    letter.check()
    page.get_by_label("Erase it from that memory too").check()
    page.get_by_role("button", name="Erase it").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    left = ok(api.get("/v1/erasures/about", params={"q": "coriander"}))
    assert [m["text"] for m in left["messages"]] == ["I hate coriander!"] and left["memories"] == []


def test_audit_shows_the_verified_chain_and_exports_everything(signed_in: Page, api, shoot):
    page = signed_in
    first = ok(api.post("/v1/memories", json={"text": "I keep bees"}), 201)
    ok(api.post("/v1/memories", json={"text": "I speak Portuguese", "pinned": True}), 201)
    ok(api.delete(f"/v1/memories/{first['id']}"))
    refused = api.post("/v1/memories", json={"text": "my password is hunter2!x7"})
    assert refused.status_code == 422 and "hunter2" not in refused.text
    page.get_by_role("link", name="Audit").click()
    expect(page.locator("#chain-status")).to_contain_text("Chain verified")
    expect(page.locator("#chain-status")).to_contain_text("all 4 events")
    rows = page.locator("table.events tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("Sensitive data kept out")  # newest first: the gate's refusal
    expect(rows.first).to_contain_text("a memory holding a credential was refused")
    expect(rows.first).to_contain_text("the sensitive-data gate")
    expect(rows.nth(1)).to_contain_text("Retracted")
    assert "hunter2" not in page.content()
    shoot(page, "06-audit")

    with page.expect_download() as waiting:
        page.get_by_role("link", name="Export everything (JSONL)").click()
    download = waiting.value
    assert download.suggested_filename.startswith("mnemo-") and download.suggested_filename.endswith(".jsonl")
    lines = [json.loads(line) for line in download.path().read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["user"]["name"] == "local"
    assert lines[-1]["type"] == "end" and lines[-1]["facts"] == 2 and lines[-1]["events"] == 4
    assert [r["after"]["gate"]["category"] for r in lines if r["type"] == "notice"] == ["credential"]
    exported = {r["text"]: r for r in lines if r["type"] == "fact"}
    assert set(exported) == {"I keep bees", "I speak Portuguese"}
    assert [e["action"] for e in exported["I keep bees"]["events"]] == ["create", "retract"]
    assert exported["I speak Portuguese"]["pinned"] is True
