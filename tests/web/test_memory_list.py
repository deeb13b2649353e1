"""The memories list: a line a memory with its actions in a menu, the count of what the filters
match, bulk retract/approve/erase, relative times, superseded rows; the audit table on a phone."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx2
import pytest
from playwright.sync_api import Browser, Page, expect

from mnemo.domain import utcnow
from tests.helpers import decisions, every_row, extraction
from tests.server.conftest import ADMIN_KEY
from tests.web.conftest import facts, ok, sign_in
from tests.web.test_review import PROPOSED, hold_candidates, status_of

pytestmark = pytest.mark.slow  # a browser against a real server

LONG = "My favourite page is https://example.org/an/unusually/long/address/that/never/breaks/by/itself/at/all"
ONE_LINE = """() => Array.from(document.querySelectorAll('li.fact .line')).map(line => {
  const height = parseFloat(getComputedStyle(line.querySelector('.text')).lineHeight);
  return line.getBoundingClientRect().height < 1.9 * height;
})"""


def row(page: Page, text: str):
    return page.locator("li.fact", has=page.get_by_role("link", name=text, exact=True))


@pytest.fixture
def theirs(server) -> Iterator[httpx2.Client]:
    """A second person, with a memory of their own."""
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}) as admin:
        token = ok(admin.post("/v1/admin/users", json={"name": "mallory"}), 201)["key"]["token"]
    headers = {"Authorization": f"Bearer {token}"}
    with httpx2.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
        ok(client.post("/v1/memories", json={"text": "Mallory hides the spare key under the mat"}), 201)
        yield client


def slip_in(page: Page, label: str, fact_id: str, button: str) -> None:
    """Tick the memory named `label` on the list, its box now holding `fact_id`, and press `button`."""
    page.goto("/memories")
    box = page.get_by_label(label)
    box.evaluate("(el, id) => { el.value = id; }", fact_id)
    box.check()
    page.get_by_role("button", name=button).click()


def rows_of_the_store(server) -> str:
    """Every row of every table of the server's database (SQLite, on the server's connection)."""
    store = server.app.state.memory.store
    with store._lock, ThreadPoolExecutor(1) as aside:  # Playwright runs an event loop in this thread
        return aside.submit(lambda: asyncio.run(every_row(store))).result()


def test_a_line_a_memory_its_menu_and_the_count(signed_in: Page, api, shoot):
    page = signed_in
    for i in range(30):
        ok(api.post("/v1/memories", json={"text": f"My locker number {i} is blue"}), 201)
    ok(api.post("/v1/memories", json={"text": LONG, "pinned": True, "category": "preference"}), 201)
    page.goto("/memories")
    expect(page.locator("#count")).to_have_text("31 active memories; 1–25 shown.")
    expect(page.locator("li.fact")).to_have_count(25)
    assert all(page.evaluate(ONE_LINE))  # even the long one: it ends in an ellipsis on a wide screen
    first = row(page, LONG)
    expect(first.locator(".meta")).to_contain_text("pinned")
    expect(first.locator(".meta")).to_contain_text("preference")
    expect(first.locator(".meta")).to_contain_text("Default assistant")
    expect(first.get_by_role("button", name="Retract")).to_be_hidden()  # in the closed menu
    shoot(page, "20-memories-compact", narrow=True)

    page.get_by_role("link", name="Older →").click()
    expect(page.locator("#count")).to_have_text("31 active memories; 26–31 shown.")
    page.goto("/memories?pinned=no")
    expect(page.locator("#count")).to_have_text("30 active memories; 1–25 shown.")
    page.goto("/memories?pinned=yes&category=preference")
    expect(page.locator("#count")).to_have_text("1 active memory.")
    page.goto("/memories?category=plan")
    expect(page.locator(".empty")).to_have_text("No memories here yet.")
    page.goto("/memories?q=locker+number+7")
    expect(page.locator("#count")).to_contain_text("matches")

    # the menu, by keyboard: Enter opens it, Tab reaches its actions, Escape closes it
    page.goto("/memories")
    menu = row(page, LONG).locator("details.menu")
    menu.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(menu).to_have_attribute("open", "")
    expect(menu.get_by_role("button", name="Unpin")).to_be_visible()
    shoot(page, "21-memories-menu", narrow=True)
    page.keyboard.press("Escape")
    expect(menu).not_to_have_attribute("open", "")
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # past "Edit…" to "Unpin"
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("Unpinned")
    assert [f["pinned"] for f in facts(api, "active") if f["text"] == LONG] == [False]


def test_a_relative_time_with_the_absolute_one_on_hover(signed_in: Page, api, server):
    page = signed_in
    memory = server.app.state.memory
    then, clock = utcnow() - timedelta(days=3, hours=2), memory.clock
    memory.clock = lambda: then  # the server's clock, three days back while it adds one
    try:
        ok(api.post("/v1/memories", json={"text": "I started learning Japanese"}), 201)
    finally:
        memory.clock = clock
    ok(api.post("/v1/memories", json={"text": "I bought a kettle"}), 201)
    page.goto("/memories")
    old = row(page, "I started learning Japanese").locator("time")
    expect(old).to_have_text("3 days ago")
    expect(old).to_have_attribute("title", then.strftime("%Y-%m-%d %H:%M UTC"))
    expect(old).to_have_attribute("datetime", then.isoformat())
    expect(row(page, "I bought a kettle").locator("time")).to_have_text("just now")


def test_a_superseded_memory_links_the_one_that_replaced_it(signed_in: Page, api, llm, shoot):
    page = signed_in
    berlin = ok(api.post("/v1/memories", json={"text": "I live in Berlin"}), 201)
    llm.reply_json(extraction("I live in Munich"))
    llm.reply_json(decisions((1, "supersede", 1)))
    job = ok(
        api.post("/v1/turns", json={"messages": [{"role": "user", "content": "I moved to Munich"}]}), 202
    )
    deadline = time.monotonic() + 15
    while ok(api.get(f"/v1/jobs/{job['job']['id']}"))["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, "the learning job did not finish"
        time.sleep(0.05)
    munich = next(f for f in facts(api) if f["text"] == "I live in Munich")

    page.goto("/memories?status=superseded")
    old = row(page, "I live in Berlin")
    expect(old.locator(".badge").first).to_have_text("superseded")
    expect(old.locator(".replaced")).to_have_text("Replaced by I live in Munich")
    shoot(page, "22-memories-superseded")
    old.get_by_role("link", name="I live in Munich").click()
    expect(page).to_have_url(re.compile(f"/memories/{munich['id']}$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("I live in Munich")
    page.goto("/memories")  # an active memory says nothing of replacing
    expect(row(page, "I live in Munich").locator(".replaced")).to_have_count(0)
    assert berlin["id"] != munich["id"]


def test_bulk_approve_and_retract_change_only_what_they_can(signed_in: Page, api, llm, theirs, shoot):
    hold_candidates(api, llm)
    ok(api.post("/v1/memories", json={"text": "I keep bees"}), 201)
    page = signed_in
    page.goto("/memories?status=candidate")
    expect(page.locator("#count")).to_have_text(f"{len(PROPOSED)} candidate memories.")
    page.get_by_role("button", name="Approve ticked").click()  # nothing ticked
    expect(page.locator(".flash")).to_contain_text("Tick at least one memory first.")
    page.get_by_label("I play chess").check()
    page.get_by_label("I hate olives").check()
    shoot(page, "23-memories-bulk", narrow=True)
    page.get_by_role("button", name="Approve ticked").click()
    expect(page.locator(".flash")).to_contain_text("Approved 2 memories.")
    expect(page).to_have_url(re.compile(r"/memories\?status=candidate$"))  # back where it was
    expect(page.locator("#count")).to_have_text(f"{len(PROPOSED) - 2} candidate memories.")
    assert status_of(api, "I play chess") == status_of(api, "I hate olives") == "active"
    assert status_of(api, "I teach maths") == "candidate"

    # retract takes the active ones; a candidate ticked with them stays as it is
    page.goto("/memories?status=all")
    page.get_by_label("I keep bees").check()
    page.get_by_label("I play chess").check()
    page.get_by_label("I teach maths").check()
    page.get_by_role("button", name="Retract ticked").click()
    expect(page.locator(".flash")).to_contain_text(
        "Retracted 2 memories. 1 other was left as they were (not active)."
    )
    assert status_of(api, "I keep bees") == status_of(api, "I play chess") == "retracted"
    assert status_of(api, "I teach maths") == "candidate"

    # another person's memory, slipped into the form, is left alone
    (their,) = facts(theirs)
    slip_in(page, "I hate olives", their["id"], "Retract ticked")
    expect(page.locator(".flash")).to_contain_text("Retracted 0 memories. 1 other was left")
    assert facts(theirs, "active") == [their]
    assert status_of(api, "I hate olives") == "active"


def test_bulk_erase_asks_first_then_erases_with_a_receipt(signed_in: Page, api, server, shoot):
    ok(api.post("/v1/memories", json={"text": "My bank PIN hint is my cat's birthday"}), 201)
    ok(api.post("/v1/memories", json={"text": "Mein Geheimnis: 秘密のメモ"}), 201)
    ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    page = signed_in
    page.goto("/memories")
    page.get_by_label("My bank PIN hint is my cat's birthday").check()
    page.get_by_label("Mein Geheimnis: 秘密のメモ").check()
    page.get_by_role("button", name="Erase ticked…").click()

    # first, what goes; nothing is erased yet
    expect(page.get_by_role("heading", level=1)).to_have_text("Erase 2 memories for good?")
    expect(page.locator("#erased-memories li")).to_have_count(2)
    expect(page.locator("#erased-memories")).to_contain_text("My bank PIN hint is my cat's birthday")
    expect(page.locator("#erased-memories")).to_contain_text("Mein Geheimnis: 秘密のメモ")
    expect(page.locator("main")).not_to_contain_text("Lisbon")
    expect(page.locator("main")).to_contain_text("cannot be undone")
    shoot(page, "24-memories-erase-confirm", narrow=True)
    assert len(facts(api, "active")) == 3
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", name="Memories", exact=True)).to_be_visible()
    assert len(facts(api, "active")) == 3

    page.get_by_label("My bank PIN hint is my cat's birthday").check()
    page.get_by_label("Mein Geheimnis: 秘密のメモ").check()
    page.get_by_role("button", name="Erase ticked…").click()
    page.get_by_role("button", name="Erase them").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Receipt of an erasure")
    expect(page.locator("main")).to_contain_text("2 memories")
    expect(page.locator("main")).not_to_contain_text("PIN hint")  # (a signature may hold "PIN")
    shoot(page, "25-memories-erase-receipt", narrow=True)
    assert [f["text"] for f in facts(api, "active")] == ["I live in Lisbon"]
    stored = rows_of_the_store(server)
    assert "PIN hint" not in stored and "秘密のメモ" not in stored and "Geheimnis" not in stored
    assert "I live in Lisbon" in stored  # what was not ticked stays
    assert ok(api.get("/v1/audit/verify"))["ok"]


def test_bulk_erase_refuses_what_is_not_the_persons_or_not_an_id(signed_in: Page, api, theirs):
    ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    page = signed_in
    (their,) = facts(theirs)
    for ids in (f"ids={their['id']}", "ids=not-an-id", "", "ids=" + "x" * 5000):
        page.goto(f"/erase/memories?{ids}")
        expect(page.get_by_role("heading", name="Memories", exact=True)).to_be_visible()
        expect(page.locator(".flash.error")).to_be_visible()
    slip_in(page, "I live in Lisbon", their["id"], "Erase ticked…")
    expect(page.locator(".flash")).to_contain_text("no longer there")
    assert facts(theirs) == [their]
    assert [f["text"] for f in facts(api)] == ["I live in Lisbon"]


def test_the_audit_table_fits_a_phone(browser: Browser, server, api, shoot):
    for i in range(3):
        fact = ok(api.post("/v1/memories", json={"text": f"{LONG}/{i}"}), 201)
        ok(api.delete(f"/v1/memories/{fact['id']}"))
    context = browser.new_context(base_url=server.base_url, viewport={"width": 375, "height": 812})
    try:
        page = context.new_page()
        sign_in(page, server.token)
        page.goto("/audit")
        expect(page.locator("table.events tbody tr")).to_have_count(6)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        region = page.get_by_role("region", name="Events")
        assert region.evaluate("el => el.scrollWidth <= el.clientWidth")  # nor inside its region
        cell = page.locator("table.events tbody tr").first.locator("td").nth(1)
        assert cell.evaluate("el => getComputedStyle(el).display") == "block"  # stacked
        expect(page.get_by_role("columnheader", name="When")).to_have_count(1)  # still a table
        shoot(page, "26-audit-phone")
    finally:
        context.close()
