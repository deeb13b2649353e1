"""Usable by keyboard, labelled for screen readers, readable on a phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.helpers import server_clock_back
from tests.web.conftest import facts, ok, sign_in
from tests.web.test_review import hold_candidates

pytestmark = pytest.mark.slow  # a browser against a real server

LONG = "My favourite page is https://example.org/an/unusually/long/address/that/never/breaks/by/itself/at/all"

# Every form control needs a name a screen reader can say: a <label>, aria-label or
# aria-labelledby (buttons: their text); ids must be unique, or labels point at the wrong thing.
UNLABELLED = """() => {
  const controls = Array.from(document.querySelectorAll('input, select, textarea, button'))
    .filter(el => el.type !== 'hidden');
  const bad = controls.filter(el => {
    if (el.tagName === 'BUTTON') return !(el.textContent.trim() || el.getAttribute('aria-label'));
    const named = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
    return !((el.labels && el.labels.length) || named);
  }).map(el => el.outerHTML);
  const ids = Array.from(document.querySelectorAll('[id]')).map(el => el.id);
  const twice = ids.filter((id, i) => ids.indexOf(id) !== i).map(id => 'duplicate id ' + id);
  const h1 = document.querySelectorAll('h1').length;
  const basics = [
    document.documentElement.lang ? null : 'no lang',
    document.querySelector('meta[name=viewport]') ? null : 'no viewport',
    document.querySelector('main#main') ? null : 'no main landmark',
    h1 === 1 ? null : h1 + ' h1 elements',
    controls.length ? null : 'no controls at all (is this the page?)',
  ].filter(Boolean);
  return [...bad, ...twice, ...basics];
}"""


def pages_to_check(api, llm, server) -> list[str]:
    """Every kind of page, with something on it."""
    with server_clock_back(server, 120):
        ok(api.post("/v1/memories", json={"text": "I plan to learn the cello", "category": "plan"}), 201)
    fact = ok(api.post("/v1/memories", json={"text": LONG, "pinned": True}), 201)
    ok(api.patch(f"/v1/memories/{fact['id']}", json={"version": 1, "text": LONG + " indeed"}))
    ok(api.post("/v1/agents", json={"name": "Chef", "private": True}), 201)
    hold_candidates(api, llm)
    return [
        "/memories",
        f"/memories/{fact['id']}",
        f"/memories/{fact['id']}/purge",
        "/erase/about?q=indeed",
        "/erase/everything",
        "/review",
        "/review/stale",
        "/conversations",
        "/conversation?id=chat-42",
        "/erasures",
        "/admin/signin",
        "/settings",
        "/audit",
        "/try",
    ]


def focused(page: Page) -> str:
    return page.evaluate(
        "document.activeElement && (document.activeElement.id || document.activeElement.textContent.trim())"
    )


def tab_to(page: Page, target: str, limit: int = 80) -> None:
    """Press Tab until the element with this id (or text) has the focus."""
    for _ in range(limit):
        if focused(page) == target:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{target!r} is not reachable by Tab (focus ended on {focused(page)!r})")


def test_sign_in_add_and_retract_by_keyboard_alone(page: Page, server, api):
    page.goto("/signin")
    assert focused(page) == "key"  # the one field has the focus at once
    page.keyboard.type(server.token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Memories", exact=True)).to_be_visible()

    page.keyboard.press("Tab")
    assert focused(page) == "Skip to content"  # the first stop
    expect(page.get_by_role("link", name="Skip to content")).to_be_visible()  # and it shows when focused
    page.keyboard.press("Enter")
    assert focused(page) == "main" or page.url.endswith("#main")

    tab_to(page, "add-text")
    page.keyboard.type("I ride a blue bicycle")
    tab_to(page, "Remember this")
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("Remembered: “I ride a blue bicycle”")

    tab_to(page, "Actions for “I ride a blue bicycle”")  # the row's menu opens by keyboard
    page.keyboard.press("Enter")
    tab_to(page, "Retract")
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("Retracted")
    assert facts(api, "retracted")[0]["text"] == "I ride a blue bicycle"


def test_every_control_on_every_page_has_a_label(signed_in: Page, api, llm, server):
    page = signed_in
    for path in pages_to_check(api, llm, server):
        page.goto(path)
        assert page.evaluate(UNLABELLED) == [], path
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()  # the sign-in page, loaded
    assert page.evaluate(UNLABELLED) == [], "/signin"


def test_every_page_fits_a_phone(browser: Browser, server, api, llm, shoot):
    paths = pages_to_check(api, llm, server)
    context = browser.new_context(base_url=server.base_url, viewport={"width": 375, "height": 812})
    try:
        page = context.new_page()
        page.goto("/signin")
        shoot(page, "15-phone-signin")
        sign_in(page, server.token)
        for path in paths:
            page.goto(path)
            if path == "/try":
                page.get_by_label("Message").fill("Tell me something I like, please")
                page.get_by_role("button", name="Send").click()
                expect(page.locator("li.turn")).to_have_count(2)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 375, f"{path} is {width} px wide on a 375 px screen"
            name = path.strip("/").replace("/stale", "-stale").split("/")[0]
            name += "-fact" if path.startswith("/memories/") else ""
            name = name.replace("conversation?id=chat-42", "conversation")
            name += "-purge" if path.endswith("/purge") else ""
            shoot(page, f"16-phone-{name}")
    finally:
        context.close()
