"""Fixtures for HTTP tests: a real server on loopback whose upstream model is the scripted one.

`server_settings` (and so every server) is parametrised over the backends:
each HTTP test runs once on SQLite and once on PostgreSQL.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import httpx2
import pytest

from mnemo.settings import AuthLimitSettings, JobSettings, Settings
from tests.fakes.live_server import LiveServer
from tests.fakes.openai_server import ScriptedOpenAI

ADMIN_KEY = "test-admin-key-0123456789"


@pytest.fixture
def server_settings(tmp_path, database_url, scripted_llm: ScriptedOpenAI) -> Settings:
    return Settings(
        data_dir=tmp_path,
        database_url=database_url,
        admin_key=ADMIN_KEY,
        llm_base_url=scripted_llm.base_url,
        llm_model="scripted-model",
        llm_timeout=5,
        jobs=JobSettings(lease_seconds=5, backoff_seconds=0.2, poll_seconds=0.05),
        # tests send many wrong keys on purpose; the limit has its own tests (test_auth_hardening.py)
        auth_limit=AuthLimitSettings(failures=0),
    )


@pytest.fixture
def server(server_settings) -> Iterator[LiveServer]:
    with LiveServer(server_settings) as live:
        yield live


@pytest.fixture
def client(server) -> Iterator[httpx2.Client]:
    """An HTTP client authenticated as the user created on first start."""
    with httpx2.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {server.token}"}, timeout=30
    ) as c:
        yield c


@pytest.fixture
def admin(server) -> Iterator[httpx2.Client]:
    """An HTTP client holding the admin key."""
    with httpx2.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    ) as c:
        yield c


@pytest.fixture
def other(server, admin) -> Iterator[httpx2.Client]:
    """An HTTP client authenticated as a second user, created through the admin route."""
    created = admin.post("/v1/admin/users", json={"name": "mallory"})
    assert created.status_code == 201, created.text
    token = created.json()["key"]["token"]
    headers = {"Authorization": f"Bearer {token}"}
    with httpx2.Client(base_url=server.base_url, headers=headers, timeout=30) as c:
        yield c


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    """Every process a test starts (append it here) is gone when the test ends."""
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
