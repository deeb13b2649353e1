"""The operator's page: signed in with the admin key only; people, their keys (a new one shown
once, revoked ones refused at once), budgets and the memory mode; no one's memories on it."""

from __future__ import annotations

import logging

import httpx2
import pytest

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
            assert admin.post("/admin/users", data={"csrf": "x", "name": "eve"}).status_code == 403
            page = admin.get("/admin").text + admin.get(f"/admin/users/{user_id}").text
            assert "4412" not in page and "eve" not in page  # no one's memories; eve was never made
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
