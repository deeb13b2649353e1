"""Browser tests of the web page: Playwright driving Debian's Chromium against a real server.

Each test gets its own `mnemo serve` (LiveServer) whose upstream and extractor
model is the scripted OpenAI-compatible server, and a fresh browser context.
They run on SQLite only: they test the page; what the store does is covered
on both backends by the other suites. A full-page screenshot of every page
visited goes to test-artifacts/web/ at the repository's root.

Chromium comes from Debian (`apt-get install chromium`; scripts/test installs
it when missing): Playwright's own browser download does not work offline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, expect, sync_playwright

from mnemo.settings import JobSettings, Settings
from tests.fakes.live_server import LiveServer
from tests.fakes.openai_server import ScriptedOpenAI
from tests.server.conftest import ADMIN_KEY

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
CHAT_REPLY = "Noted — happy to help."

expect.set_options(timeout=10_000)


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Playwright's sync API keeps an event loop running in this thread while it is open, and
    pytest-asyncio cannot start one beside it: so it closes when tests/web is done."""
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: scripts/test installs it (apt-get install chromium)")
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM),
        args=["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    )
    yield browser
    browser.close()


def _responder(body: dict[str, Any]) -> str:
    """Extraction requests (they ask for JSON) learn nothing unless a test queued a reply;
    a chat turn gets a fixed answer."""
    return json.dumps({"facts": []}) if body.get("response_format") else CHAT_REPLY


@pytest.fixture
def llm(scripted_llm: ScriptedOpenAI) -> ScriptedOpenAI:
    scripted_llm.responder = _responder
    return scripted_llm


def web_settings(tmp_path: Path, llm: ScriptedOpenAI | None) -> Settings:
    model = {"llm_base_url": llm.base_url, "llm_model": "scripted-model", "llm_timeout": 5} if llm else {}
    return Settings(
        data_dir=tmp_path,
        admin_key=ADMIN_KEY,
        jobs=JobSettings(lease_seconds=5, backoff_seconds=0.2, poll_seconds=0.05),
        **model,
    )


@pytest.fixture
def server(tmp_path: Path, llm: ScriptedOpenAI) -> Iterator[LiveServer]:
    with LiveServer(web_settings(tmp_path, llm)) as live:
        yield live


@pytest.fixture
def api(server: LiveServer) -> Iterator[httpx2.Client]:
    """The HTTP API as the same person, to set things up and to check what the page did."""
    headers = {"Authorization": f"Bearer {server.token}"}
    with httpx2.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
        yield client


@pytest.fixture
def context(browser: Browser, server: LiveServer) -> Iterator[BrowserContext]:
    context = browser.new_context(base_url=server.base_url, viewport={"width": 1100, "height": 900})
    context.set_default_timeout(10_000)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # the page's "are you sure?" questions
    return page


def sign_in(page: Page, token: str) -> None:
    page.goto("/signin")
    page.get_by_label("API key").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Memories", exact=True)).to_be_visible()


@pytest.fixture
def signed_in(page: Page, server: LiveServer) -> Page:
    sign_in(page, server.token)
    return page


@pytest.fixture
def shoot() -> Callable[..., None]:
    """Save a full-page screenshot of what the page shows now."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page: Page, name: str, *, narrow: bool = False) -> None:
        """`narrow`: once more at a phone's width (375 px), as `{name}-375.png`."""
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        if narrow:
            size = page.viewport_size
            page.set_viewport_size({"width": 375, "height": 812})
            page.screenshot(path=str(ARTIFACTS / f"{name}-375.png"), full_page=True)
            if size:
                page.set_viewport_size(size)

    return take


def ok(reply: httpx2.Response, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    return reply.json()


def facts(api: httpx2.Client, status: str = "all") -> list[dict]:
    return ok(api.get("/v1/memories", params={"status": status, "limit": 200}))["items"]
