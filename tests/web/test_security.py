"""What the page refuses: another person's memories, forged forms, revoked keys, bad ids."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest
from playwright.sync_api import Page, expect

from tests.server.api import new_user
from tests.web.conftest import facts, ok

pytestmark = pytest.mark.slow  # a browser against a real server

SECRET = "The vault code is 4711"


@pytest.fixture
def mallorys_fact(server) -> dict:
    token = new_user(server, "mallory")
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}) as mallory:
        return ok(mallory.post("/v1/memories", json={"text": SECRET}), 201)


def csrf(page: Page) -> str:
    return page.locator('input[name="csrf"]').first.get_attribute("value") or ""


def test_another_persons_memory_is_not_found_and_cannot_be_touched(signed_in: Page, mallorys_fact, shoot):
    page = signed_in
    for path in (f"/memories/{mallorys_fact['id']}", f"/memories/{mallorys_fact['id']}/purge"):
        response = page.goto(path)
        assert response is not None and response.status == 404
        expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
        assert SECRET not in page.content()
    shoot(page, "14-not-found")

    token = csrf(page)
    for action in ("retract", "purge", "pin", "edit"):
        reply = page.request.post(
            f"/memories/{mallorys_fact['id']}/{action}",
            form={"csrf": token, "text": "pwned", "category": "other", "version": "1", "pinned": "1"},
            max_redirects=0,
        )
        assert reply.status == 404 and SECRET not in reply.text(), action
    reply = page.request.post(f"/review/{mallorys_fact['id']}", form={"csrf": token, "action": "approve"})
    assert reply.status == 404

    for path in ("/memories/not-an-id", "/memories/0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c"):
        response = page.goto(path)
        assert response is not None and response.status == 404


def test_a_form_without_the_right_token_or_from_another_site_changes_nothing(signed_in: Page, api, server):
    page = signed_in
    fact = ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    page.goto(f"/memories/{fact['id']}")
    token = csrf(page)
    url = f"/memories/{fact['id']}/retract"
    refused = [
        page.request.post(url, form={}, max_redirects=0),
        page.request.post(url, form={"csrf": "0" * 64}, max_redirects=0),
        page.request.post(url, form={"csrf": token[:-1]}, max_redirects=0),
        page.request.post(
            url, form={"csrf": token}, headers={"Origin": "http://evil.example"}, max_redirects=0
        ),
        page.request.post(
            url, form={"csrf": token}, headers={"Sec-Fetch-Site": "cross-site"}, max_redirects=0
        ),
    ]
    assert [r.status for r in refused] == [403] * len(refused)
    assert "Nothing was changed" in refused[0].text()
    assert facts(api)[0]["status"] == "active" and facts(api)[0]["version"] == 1

    # the same request with the token, from our own page, goes through
    assert page.request.post(url, form={"csrf": token}, max_redirects=0).status == 303
    assert facts(api)[0]["status"] == "retracted"


@pytest.fixture
def other_origin(server) -> Iterator[str]:
    """A page on another origin (another port of the same host, so the cookie still goes along)
    whose form posts to mnemo as soon as it loads."""

    class Attacker(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            target = self.path.removeprefix("/?target=")
            html = (
                f'<form id="f" method="post" action="{server.base_url}{target}">'
                '<input name="csrf" value="guessed"></form><script>f.submit()</script>'
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_cross_site_form_in_the_browser_is_refused(signed_in: Page, api, server, other_origin):
    page = signed_in
    fact = ok(api.post("/v1/memories", json={"text": "I live in Lisbon"}), 201)
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.goto(f"{other_origin}/?target=/memories/{fact['id']}/retract")
    assert posted.value.url == f"{server.base_url}/memories/{fact['id']}/retract"
    assert posted.value.status == 403
    expect(page.get_by_role("heading", level=1)).to_have_text("Refused")
    assert facts(api)[0]["status"] == "active"


def test_revoking_the_key_elsewhere_signs_the_session_out_at_once(signed_in: Page, server):
    page = signed_in
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {server.token}"}) as api:
        spare = ok(api.post("/v1/me/keys", json={"name": "spare"}), 201)["token"]
        (first,) = [k for k in ok(api.get("/v1/me/keys")) if k["name"] == "first start"]
    with httpx2.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {spare}"}) as other:
        ok(other.delete(f"/v1/me/keys/{first['id']}"))
    page.goto("/memories")
    expect(page).to_have_url(re.compile(r"/signin\?next="))
    expect(page.locator(".notice")).to_contain_text("You were signed out")
    assert not page.context.cookies()  # the dead cookie is cleared
    reply = page.request.post("/memories", form={"csrf": "x", "text": "I sneak in"}, max_redirects=0)
    assert reply.status == 303 and reply.headers["location"] == "/signin"
