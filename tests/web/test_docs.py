"""The API reference at /docs: Swagger UI served by this server, under the site's CSP, and working."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import httpx2
import pytest
from playwright.sync_api import Page, Request, expect

pytestmark = pytest.mark.slow  # a browser against a real server


class Loads(HTMLParser):
    """Every URL a page makes the browser load, and the text of its inline scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("src", "href"):
            if found.get(name) is not None and (tag != "a" or name != "href"):
                self.urls.append(found[name] or "")
        self._in_script = tag == "script" and "src" not in found

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline_scripts.append(data)


def directives(csp: str) -> dict[str, list[str]]:
    parts = (d.split() for d in csp.split(";") if d.strip())
    return {p[0]: p[1:] for p in parts}


def test_docs_load_nothing_from_elsewhere(server):
    with httpx2.Client(base_url=server.base_url) as client:
        docs = client.get("/docs")
        assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
        policy = directives(docs.headers.get("content-security-policy", ""))
        assert policy.get("default-src") == ["'self'"], policy
        assert policy.get("script-src") == ["'self'"], policy
        assert policy.get("frame-ancestors") == ["'none'"], policy
        assert docs.headers["x-content-type-options"] == "nosniff"

        page = Loads()
        page.feed(docs.text)
        assert page.inline_scripts == []
        assert len(page.urls) >= 3, page.urls  # the bundle, its configuration, the stylesheet
        for url in page.urls:
            absolute = urljoin(str(docs.url), url)
            assert urlsplit(absolute).netloc == urlsplit(server.base_url).netloc, url
            asset = client.get(absolute)
            assert asset.status_code == 200 and asset.content, url
            assert asset.headers["x-content-type-options"] == "nosniff", url

        # ReDoc would need inline styles and a CDN: it is not served
        assert client.get("/redoc").status_code == 404


def test_docs_render_the_operations_under_the_csp(page: Page, server, shoot):
    complaints: list[str] = []
    elsewhere: list[str] = []
    page.on("console", lambda m: complaints.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: complaints.append(str(error)))

    def outside(request: Request) -> None:
        if not request.url.startswith(server.base_url + "/"):
            elsewhere.append(request.url)

    page.on("request", outside)

    page.goto("/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    memories = page.locator(".opblock-get", has=page.locator('[data-path="/v1/memories"]'))
    expect(memories.first).to_be_visible()
    memories.first.locator(".opblock-summary").click()  # an operation opens: the UI's scripts run
    expect(page.get_by_role("button", name="Try it out").first).to_be_visible()
    shoot(page, "docs")
    assert complaints == [], complaints
    assert elsewhere == [], elsewhere
