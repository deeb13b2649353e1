"""The operator's page: signed in with the admin key only; people, their keys (a new one shown
once, revoked ones refused at once), budgets and the memory mode; no one's memories on it."""

from __future__ import annotations

import logging
import re

import httpx2
import pytest
from playwright.sync_api import expect

from tests.web.conftest import ADMIN_KEY, ok

pytestmark = pytest.mark.slow  # a real server


def _token(html: str) -> str:
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_the_admin_page_manages_people_keys_budgets_and_the_mode(server, api, caplog):
    ok(api.post("/v1/memories", json={"text": "My locker code is 4412"}), 201)
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as admin:
        assert admin.get("/admin").url.path == "/admin/signin"
        assert admin.post("/admin/signin", data={"key": server.token}).status_code == 401  # a person's key
        assert admin.post("/admin/signin", data={"key": "nope"}).status_code == 401
        with caplog.at_level(logging.INFO, logger="mnemo.admin"):
            home = admin.post("/admin/signin", data={"key": ADMIN_KEY})
            assert home.status_code == 200 and "People" in home.text and "local" in home.text
            token = _token(home.text)
            made = admin.post("/admin/users", data={"csrf": token, "name": "ana"})
            assert made.status_code == 200 and 'id="new-key"' in made.text
            key = made.text.split('id="made-key" value="', 1)[1].split('"', 1)[0]
            with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}) as ana:
                assert ana.get("/v1/me").json()["user"]["name"] == "ana"
                user_id = ana.get("/v1/me").json()["user"]["id"]
                key_id = key.split("_")[1]
                revoke = f"/admin/users/{user_id}/keys/{key_id}/revoke"
                revoked = admin.post(revoke, data={"csrf": token})
                assert "Revoked the key" in revoked.text
                assert ana.get("/v1/me").status_code == 401
            budget = admin.post(f"/admin/users/{user_id}/budget", data={"csrf": token, "tokens": "5000"})
            assert "Budget saved." in budget.text and 'value="5000"' in budget.text
            bad = admin.post(f"/admin/users/{user_id}/budget", data={"csrf": token, "tokens": "lots"})
            assert "whole number" in bad.text
            mode = admin.post("/admin/mode", data={"csrf": token, "mode": "enabled_default_off"})
            assert "Memory mode: enabled_default_off." in mode.text
            # no form token, or a wrong one: refused, nothing changed
            assert admin.post("/admin/mode", data={"mode": "disabled"}).status_code == 403
            assert admin.post("/admin/users", data={"csrf": "x", "name": "Zebulon Quist"}).status_code == 403
            page = admin.get("/admin").text + admin.get(f"/admin/users/{user_id}").text
            assert "4412" not in page and "Quist" not in page  # no one's memories; Zebulon was never made
        logged = " ".join(r.getMessage() for r in caplog.records if r.name == "mnemo.admin")
        assert "created user" in logged and "revoked key" in logged and "ana" not in logged
        assert admin.post("/admin/signout", data={"csrf": token}).url.path == "/admin/signin"
        assert admin.get("/admin").url.path == "/admin/signin"
    assert ok(api.get("/v1/me"))["server_memory_mode"] == "enabled_default_off"
    # the person's own page does not take the admin cookie, nor the admin page the person's
    with httpx2.Client(base_url=server.base_url, follow_redirects=True, timeout=30) as person:
        person.post("/signin", data={"key": server.token})
        assert person.get("/admin").url.path == "/admin/signin"
        assert person.post("/admin/mode", data={"mode": "disabled"}).status_code == 403


@pytest.mark.parametrize("width", [1280, 390])
def test_an_operator_renames_disables_and_enables_a_person_in_a_browser(browser, server, api, width, shoot):
    """In Chromium, at a desk's width and a phone's: every control labelled, nothing wider than
    the screen; a rename, a disabled person's key refused and taken back, when each key last
    worked and the person's turns."""
    from tests.web.test_accessibility import UNLABELLED

    ok(api.get("/v1/me"))  # the local key has worked: its last use shows
    context = browser.new_context(base_url=server.base_url, viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto("/admin")
        page.get_by_label("Admin key").fill(ADMIN_KEY)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#people")).to_contain_text("local")
        expect(page.locator("#people thead")).to_contain_text("Turns failed")
        page.get_by_label("New person's name").fill("ana")
        page.get_by_role("button", name="Create, with a first key").click()
        key = page.locator("#made-key").input_value()
        page.goto("/admin/users")  # where the new key was shown: reloaded later, the list
        assert page.url.endswith("/admin")
        page.get_by_role("link", name="ana").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("ana")  # the person's page has loaded
        expect(page).to_have_title(re.compile(r"^ana · Administration[^<]*$"))
        person = page.url.removeprefix(server.base_url)
        for path in ("/admin", person):
            page.goto(path)
            assert page.evaluate(UNLABELLED) == [], path
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width, f"{path} is {wide} px wide on a {width} px screen"
        shoot(page, f"17-admin-person-{width}")
        expect(page.locator("#keys")).to_contain_text("never")  # ana's first key has not worked yet

        page.get_by_label("Name", exact=True).fill("Ana Ødegård")
        page.get_by_role("button", name="Rename").click()
        expect(page.locator(".flash")).to_contain_text("Renamed.")
        expect(page.get_by_role("heading", level=1)).to_have_text("Ana Ødegård")

        page.get_by_role("button", name="Disable the account").click()
        expect(page.locator(".flash")).to_contain_text("Disabled")
        expect(page.locator("#account-state")).to_contain_text("Disabled")
        with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}) as ana:
            assert ana.get("/v1/me").status_code == 403
            page.get_by_role("button", name="Enable the account").click()
            expect(page.locator(".flash")).to_contain_text("Enabled")
            assert ana.get("/v1/me").json()["user"]["name"] == "Ana Ødegård"

        page.goto("/admin")
        page.get_by_role("link", name="local").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("local")
        expect(page.locator("#keys")).not_to_contain_text("never")  # worked within the hour
    finally:
        context.close()


def test_the_admin_sign_in_says_when_to_come_back(tmp_path):
    from mnemo.settings import AuthLimitSettings
    from tests.fakes.live_server import LiveServer
    from tests.web.conftest import web_settings

    limit = AuthLimitSettings(failures=2, window=60)
    limited = web_settings(tmp_path, None).model_copy(update={"auth_limit": limit})
    with LiveServer(limited) as live, httpx2.Client(base_url=live.base_url, timeout=30) as admin:
        said = [admin.post("/admin/signin", data={"key": f"wrong-{i}"}) for i in range(3)]
        assert [r.status_code for r in said] == [401, 401, 429]
        assert int(said[-1].headers["Retry-After"]) > 0 and "Try again in" in said[-1].text
