"""Settings: the memory switch against the server mode, the review policy, agents and API keys."""

from __future__ import annotations

import re

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.server.conftest import ADMIN_KEY
from tests.web.conftest import ok

pytestmark = pytest.mark.slow  # a browser against a real server


def test_the_switch_shows_when_the_server_mode_overrides_it(signed_in: Page, api, server, shoot):
    page = signed_in
    page.get_by_role("link", name="Settings").click()
    expect(page.locator(".state")).to_contain_text("Memory is on for you now")
    expect(page.get_by_label("As the server's mode says")).to_be_checked()

    page.get_by_label("Off", exact=True).check()
    page.get_by_role("button", name="Save switch").click()
    expect(page.locator(".flash")).to_contain_text("Memory is now off for you")
    expect(page.locator(".state")).to_contain_text("Memory is off for you now")
    assert ok(api.get("/v1/me"))["memory_enabled"] is False

    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}) as admin:
        ok(admin.patch("/v1/admin/settings", json={"memory_mode": "disabled"}))
    page.get_by_label("On", exact=True).check()
    page.get_by_role("button", name="Save switch").click()
    expect(page.locator(".flash")).to_contain_text("the server's mode keeps memory off")
    expect(page.locator(".notice")).to_contain_text("the server's mode overrides it")
    expect(page.locator("main")).to_contain_text("memory is off for everyone on this server")
    shoot(page, "09-settings-overridden")

    page.get_by_label("Review", exact=True).check()
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator(".flash")).to_contain_text("Review policy: review")
    assert ok(api.get("/v1/me"))["review_policy"] == "review"


def test_the_sensitive_data_gate_is_set_on_the_page(signed_in: Page, api):
    page = signed_in
    page.goto("/settings")
    expect(page.get_by_label("Payment cards")).to_have_value("redact")
    page.get_by_label("Payment cards").select_option("allow")
    page.get_by_label("Email addresses").select_option("hold")
    page.get_by_role("button", name="Save sensitive-data gate").click()
    expect(page.locator(".flash")).to_contain_text("Sensitive-data gate saved")
    gate = ok(api.get("/v1/me"))["sensitive_gate"]
    assert (gate["card"], gate["email"], gate["credential"]) == ("allow", "hold", "block")
    expect(page.get_by_label("Payment cards")).to_have_value("allow")


def test_agents_are_created_private_and_deleted(signed_in: Page, api, shoot):
    page = signed_in
    page.goto("/settings")
    page.get_by_label("Name", exact=True).fill("Chef")
    page.get_by_label("Private (the default assistant cannot read its memories)").check()
    page.get_by_role("button", name="Create agent").click()
    expect(page.locator(".flash")).to_contain_text("Agent “Chef” created")
    (chef,) = ok(api.get("/v1/agents"))
    assert chef["name"] == "Chef" and chef["private"] is True
    ok(api.post("/v1/memories", json={"text": "I cook with cast iron", "agent_id": chef["id"]}), 201)

    page.get_by_label("Name", exact=True).fill("Chef")  # taken: the form again, with what was typed
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("alert")).to_contain_text("already exists")
    expect(page.get_by_label("Name", exact=True)).to_have_value("Chef")
    shoot(page, "10-settings")

    page.goto("/settings")
    agent_row = page.locator("ul.rows li", has_text="Chef")
    agent_row.get_by_role("button", name="Delete").click()  # the confirm() is accepted
    expect(page.locator(".flash")).to_contain_text("1 of its memories retracted")
    assert ok(api.get("/v1/agents")) == []


def test_a_new_key_is_shown_once_and_revoking_ones_own_key_signs_out(signed_in: Page, server, shoot):
    page = signed_in
    page.goto("/settings")
    page.get_by_label("Name (what it is for)").fill("laptop")
    page.get_by_role("button", name="Create key").click()
    token = page.get_by_label("New API key").input_value()
    assert re.fullmatch(r"mnemo_[0-9a-f]{16}_[A-Za-z0-9_-]+", token)
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}) as laptop:
        assert laptop.get("/v1/me").status_code == 200
        page.goto("/settings")
        expect(page.locator("main")).not_to_contain_text(token)  # never again
        page.locator("ul.rows li", has_text="laptop").get_by_role("button", name="Revoke").click()
        expect(page.locator(".flash")).to_contain_text("Key “laptop” revoked")
        assert laptop.get("/v1/me").status_code == 401

    expect(page.locator("ul.rows li", has_text="first start")).to_contain_text(
        "you are signed in with this key"
    )
    page.locator("ul.rows li", has_text="first start").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.locator(".flash")).to_contain_text("You revoked the key you were signed in with")
    page.goto("/settings")
    expect(page).to_have_url(re.compile(r"/signin"))
