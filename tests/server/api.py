"""Helpers for the HTTP API tests (this module holds no tests of its own)."""

from __future__ import annotations

import time
from typing import Any

import httpx2

from tests.server.conftest import ADMIN_KEY


def client_for(server, token: str | None) -> httpx2.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.Client(base_url=server.base_url, headers=headers, timeout=30)


def new_user(server, name: str) -> str:
    """Create a user through the admin route; its key."""
    with client_for(server, ADMIN_KEY) as admin:
        reply = admin.post("/v1/admin/users", json={"name": name})
    assert reply.status_code == 201, reply.text
    return reply.json()["key"]["token"]


def ok(reply: httpx2.Response, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    return reply.json()


def add(client: httpx2.Client, text: str, **fields: Any) -> dict:
    return ok(client.post("/v1/memories", json={"text": text, **fields}), 201)


def texts(page: dict) -> list[str]:
    return [item.get("fact", item)["text"] for item in page["items"]]


def wait_for_job(client: httpx2.Client, job_id: str, timeout: float = 15.0) -> dict:
    """Poll the job until it is finished: done, failed, skipped or waiting for a chat model."""
    deadline = time.monotonic() + timeout
    while True:
        job = ok(client.get(f"/v1/jobs/{job_id}"))
        if job["status"] in ("done", "failed", "skipped", "waiting"):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job still {job['status']} after {timeout} s: {job}")
        time.sleep(0.05)


def submit(client: httpx2.Client, said: str, **fields: Any) -> dict:
    """Hand over a turn in which the user said `said`; the answer's body."""
    body = {"messages": [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]}
    return client.post("/v1/turns", json={**body, **fields}).json()
