"""The page's answers as plain HTTP: kept out of the API's schema, locked down, shipped assets."""

from __future__ import annotations

import httpx2
import pytest

from tests.web.conftest import ok

pytestmark = pytest.mark.slow  # a browser against a real server


def test_pages_stay_out_of_the_api_schema(server):
    schema = ok(httpx2.get(f"{server.base_url}/openapi.json", timeout=60))
    paths = set(schema["paths"])
    assert "/v1/memories" in paths
    assert not {p for p in paths if not p.startswith(("/v1/", "/healthz", "/readyz", "/metrics"))}, paths


def test_pages_forbid_framing_and_foreign_scripts_and_are_not_cached(server):
    with httpx2.Client(base_url=server.base_url) as client:
        signin = client.get("/signin")
        assert signin.status_code == 200 and signin.headers["content-type"].startswith("text/html")
        csp = signin.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "form-action 'self'" in csp
        assert signin.headers["cache-control"] == "no-store"
        assert signin.headers["x-content-type-options"] == "nosniff"
        assert '<script src="/static/mnemo.js"' in signin.text and "http" not in signin.text.split("<body")[0]

        css = client.get("/static/mnemo.css")
        assert css.status_code == 200 and "focus-visible" in css.text
        assert client.get("/static/mnemo.js").status_code == 200


def test_without_signing_in_pages_send_you_to_sign_in_and_forms_change_nothing(server, api):
    with httpx2.Client(base_url=server.base_url, follow_redirects=False) as client:
        pages = (
            "/",
            "/memories",
            "/review",
            "/review/stale",
            "/conversations",
            "/conversation?id=c1",
            "/settings",
        )
        pages += ("/audit", "/try", "/export.jsonl")
        for path in pages:
            reply = client.get(path)
            assert reply.status_code == 303 and reply.headers["location"].startswith("/signin"), path
        reply = client.post("/memories", data={"text": "I sneak in", "csrf": "x"})
        assert reply.status_code == 303 and reply.headers["location"] == "/signin"
        reply = client.post("/signin", data={"key": server.token}, headers={"Origin": "http://evil.example"})
        assert reply.status_code == 403 and "mnemo_session" not in reply.headers.get("set-cookie", "")
        reply = client.get("/signin?next=//evil.example/x")
        assert 'name="next" value=""' in reply.text  # only places on this site
    assert ok(api.get("/v1/memories"))["items"] == []


def test_a_browser_on_an_address_that_is_no_page_or_takes_a_form_gets_a_page(server, api):
    fact = ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    html = {"Accept": "text/html,application/xhtml+xml"}
    with httpx2.Client(base_url=server.base_url, follow_redirects=True) as browser:
        assert browser.post("/signin", data={"key": server.token}).status_code == 200
        reloaded = browser.get(f"/memories/{fact['id']}/retract", headers=html)  # a form's address
        assert reloaded.status_code == 405 and "text/html" in reloaded.headers["content-type"]
        assert "Use the page" in reloaded.text and reloaded.headers["allow"] == "POST"
        nowhere = browser.get("/nowhere", headers=html)
        assert nowhere.status_code == 404 and "Not found" in nowhere.text
        # the API, and a client that does not ask for a page, answer as before
        assert browser.get("/v1/nowhere", headers=html).json()["error"]["message"] == "Not Found"
        assert browser.get(f"/memories/{fact['id']}/retract").json()["error"]["message"]
    assert ok(api.get(f"/v1/memories/{fact['id']}"))["status"] == "active"


def test_a_flash_cookie_no_page_made_is_no_flash(server):
    import base64

    deep = base64.urlsafe_b64encode(b"[" * 1400).decode()
    planted = base64.urlsafe_b64encode(
        b'{"kind": "ok", "text": "x", "undo": {"id": "nope", "version": 1}}'
    ).decode()
    with httpx2.Client(base_url=server.base_url, follow_redirects=True) as browser:
        for value in (deep, "%%%", "a" * 5000, planted):
            browser.cookies.set("mnemo_flash", value)
            shown = browser.get("/signin")
            assert shown.status_code == 200 and "/undo" not in shown.text
