"""The Dockerfile: built with podman, started, ready, remembering and recalling over HTTP, stopped,
and started again on the same volume. Slow (minutes the first time: the base image and the
pinned packages; podman keeps their layers for the next run)."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tests.container.engine import SKIP_VARIABLE, build, dangling, podman
from tests.server.processes import free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get(SKIP_VARIABLE) == "1", reason=f"{SKIP_VARIABLE}=1"),
]

KEY = re.compile(r"mnemo_[0-9a-f]{16}_[A-Za-z0-9_-]+")
ADMIN = "container-test-admin-key-0123456789"


def call(base: str, method: str, path: str, key: str, body: object = None) -> tuple[int, object]:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


class Container:
    """`mnemo serve` in the image, port 8420 published on a free loopback port."""

    def __init__(self, image: str, volume: str) -> None:
        self.name = f"mnemo-test-{uuid.uuid4().hex[:8]}"
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        podman(
            "run", "--detach", "--name", self.name, "--publish", f"127.0.0.1:{port}:8420",
            "--volume", f"{volume}:/data", "--env", f"MNEMO_ADMIN_KEY={ADMIN}", image,
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while not ready(self.base):
            state = podman("inspect", "--format", "{{.State.Status}}", self.name).stdout.strip()
            assert state == "running", f"the container is {state}:\n{self.logs()}"
            assert time.monotonic() < deadline, f"/readyz never answered 200:\n{self.logs()}"
            time.sleep(0.5)

    def logs(self) -> str:
        done = podman("logs", self.name, check=False)
        return done.stdout + done.stderr

    def stop(self) -> int:
        podman("stop", "--time", "20", self.name)
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout)

    def remove(self) -> None:
        podman("rm", "--force", self.name, check=False)


SECRET = f"pip-secret-{uuid.uuid4().hex}"  # in the pip.conf the build is given as a secret


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """The image's tag, and the unnamed images there were before its build and after it."""
    tag = f"localhost/mnemo-test:{uuid.uuid4().hex[:8]}"
    before = dangling()
    build(tag, tmp_path_factory.mktemp("build"), SECRET)
    yield tag, before, dangling()
    podman("rmi", "--force", tag, check=False)


@pytest.fixture(scope="module")
def image(built) -> str:
    return built[0]


def test_the_build_keeps_neither_its_secrets_nor_a_stage_image(built) -> None:
    tag, before, after = built
    assert after <= before  # the build stage left no unnamed image behind
    # the secrets were there while pip installed, and are in no layer: no file holds the pip.conf
    found = podman(
        "run", "--rm", "--entrypoint", "sh", tag, "-c",
        f"ls /run/secrets /etc/pip.conf 2>&1; grep -rls {SECRET} /etc /opt /root /run /src /tmp /var /data",
        check=False,
    )  # fmt: skip
    assert SECRET not in found.stdout and "No such file" in found.stdout, found.stdout
    assert found.stdout.count("No such file") == 2, found.stdout
    history = podman("history", "--no-trunc", "--format", "{{.CreatedBy}}", tag).stdout
    assert SECRET not in history and "ca-certificates.crt" not in history


@pytest.fixture
def volume():
    name = f"mnemo-test-data-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", name)
    yield name
    podman("volume", "rm", "--force", name, check=False)


def test_the_image_serves_remembers_and_keeps_its_data_on_the_volume(image: str, volume: str) -> None:
    first = Container(image, volume)
    try:
        # the image's own health check asks /readyz
        assert podman("healthcheck", "run", first.name, check=False).returncode == 0, first.logs()
        # not root; the data directory and the database are the mnemo user's alone
        assert podman("exec", first.name, "id", "-un").stdout.strip() == "mnemo"
        modes = podman("exec", first.name, "stat", "-c", "%a %U %n", "/data", "/data/mnemo.db").stdout
        assert modes.split("\n")[:2] == ["700 mnemo /data", "600 mnemo /data/mnemo.db"]
        # the first start printed the local user's key once
        keys = KEY.findall(first.logs())
        assert len(keys) == 1, first.logs()
        key = keys[0]
        status, added = call(first.base, "POST", "/v1/memories", key, {"text": "I am allergic to peanuts"})
        assert status == 201, added
        call(first.base, "POST", "/v1/memories", key, {"text": "My sister lives in Lisbon"})
        status, found = call(
            first.base, "POST", "/v1/memories/search", key, {"query": "what must I not eat?"}
        )
        assert status == 200, found
        assert found["items"][0]["fact"]["text"] == "I am allergic to peanuts"
        # the admin key from the environment works; a wrong one does not
        assert call(first.base, "GET", "/v1/admin/users", ADMIN)[0] == 200
        assert call(first.base, "GET", "/v1/admin/users", "not-the-admin-key")[0] == 401
        assert first.stop() == 0, first.logs()  # SIGTERM: a clean shutdown
        assert "Application shutdown complete" in first.logs()
    finally:
        first.remove()

    second = Container(image, volume)
    try:
        assert KEY.findall(second.logs()) == [], second.logs()  # the same user: no new key
        status, found = call(second.base, "POST", "/v1/memories/search", key, {"query": "peanut allergy"})
        assert status == 200, found
        assert [item["fact"]["id"] for item in found["items"]][:1] == [added["id"]]
        assert second.stop() == 0, second.logs()
    finally:
        second.remove()
