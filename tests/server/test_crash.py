"""A real `mnemo serve` killed mid-job loses no turn and learns none twice; `mnemo worker` gives
back the job in hand when stopped. Both run as the installed script, in processes of their own."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from mnemo.domain import JobStatus, Scope, Turn
from mnemo.memory import Memory
from tests.helpers import extraction, in_store
from tests.server.api import client_for, ok, submit

MNEMO = str(Path(sys.executable).with_name("mnemo"))
ADMIN = "crash-test-admin-key-0123"
FACTS = [
    "I keep bees on my balcony",
    "I play the oboe in a community orchestra",
    "I am allergic to penicillin",
    "My passport expires in 2031",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(data_dir: Path, scripted_llm) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(
        MNEMO_DATA_DIR=str(data_dir),
        MNEMO_ADMIN_KEY=ADMIN,
        MNEMO_LLM_BASE_URL=scripted_llm.base_url,
        MNEMO_LLM_MODEL="scripted-model",
        MNEMO_JOBS__LEASE_SECONDS="2",
        MNEMO_JOBS__POLL_SECONDS="0.05",
        MNEMO_JOBS__BACKOFF_SECONDS="0.2",
    )
    return env


class Serve:
    """`mnemo serve` on a free port; `token` is the key it printed, if it printed one."""

    def __init__(self, data_dir: Path, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [MNEMO, "serve", "--port", str(self.port)], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 20
        while not self._healthy():
            assert self.process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"mnemo serve did not start:\n{log.read_text()}"
            time.sleep(0.05)
        found = re.search(r"mnemo_[0-9a-f]{16}_[A-Za-z0-9_-]+", log.read_text())
        self.token = found.group(0) if found else None

    def _healthy(self) -> bool:
        try:
            return httpx2.get(f"{self.base_url}/healthz", timeout=1).status_code == 200
        except httpx2.TransportError:
            return False

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    """Every process a test starts is gone when it ends."""
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)


def wait_until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


def jobs(client) -> list[dict]:
    return ok(client.get("/v1/jobs", params={"limit": 200}))["items"]


def test_killing_the_server_mid_job_loses_no_turn_and_doubles_no_fact(tmp_path, scripted_llm, processes):
    env = environment(tmp_path / "data", scripted_llm)
    scripted_llm.stall(60, '{"facts": []}')  # the first job's model call hangs: it stays claimed
    first = Serve(tmp_path / "data", env, tmp_path / "first.log")
    processes.append(first.process)
    assert first.token, first.log.read_text()
    with client_for(first, first.token) as client:
        queued = [submit(client, fact, conversation_id=f"chat-{i}") for i, fact in enumerate(FACTS)]
        assert all(q["queued"] for q in queued)
        wait_until(lambda: scripted_llm.chat_requests(), 10, "the first job's model call")
        statuses = Counter(j["status"] for j in jobs(client))
        assert statuses == {"claimed": 1, "pending": len(FACTS) - 1}
    first.kill()  # SIGKILL: no shutdown, the claimed job keeps its lease until it runs out

    for fact in FACTS:
        scripted_llm.reply_json(extraction(fact))
    second = Serve(tmp_path / "data", env, tmp_path / "second.log")
    processes.append(second.process)
    assert second.token is None  # the first start's user and key carry on
    with client_for(second, first.token) as client:
        done = wait_until(
            lambda: (found := jobs(client)) and all(j["status"] == "done" for j in found) and found,
            20,
            "every job to finish",
        )
        assert len(done) == len(FACTS)
        assert sorted(j["attempts"] for j in done) == [1] * (len(FACTS) - 1) + [2]
        assert all(j["result"]["events"] == 1 and not j["result"]["problems"] for j in done)

        facts = ok(client.get("/v1/memories", params={"status": "all", "limit": 200}))["items"]
        assert Counter(f["text"] for f in facts) == Counter(FACTS)
        assert {f["source"]["conversation_id"] for f in facts} == {f"chat-{i}" for i in range(len(FACTS))}
        events = ok(client.get("/v1/audit", params={"limit": 200}))["items"]
        assert Counter(e["action"] for e in events) == {"create": len(FACTS)}
        assert ok(client.get("/v1/audit/verify"))["ok"]
    assert len(scripted_llm.chat_requests()) == len(FACTS) + 1  # the hung call, then one per turn
    second.process.send_signal(signal.SIGTERM)
    second.process.wait(timeout=15)  # uvicorn shuts down, then re-raises the signal
    assert "Application shutdown complete" in second.log.read_text()


def test_a_stopped_worker_gives_its_job_back_and_the_next_one_learns_it(
    tmp_path, scripted_llm, embedder, processes
):
    data = tmp_path / "data"
    env = {**environment(data, scripted_llm), "MNEMO_JOBS__LEASE_SECONDS": "60"}

    async def queue_turn(memory: Memory):
        user = await memory.user("local")
        return await memory.submit(Turn.of(Scope(user.id), ("user", FACTS[0]), ("assistant", "Lovely!")))

    job = in_store(data, embedder, queue_turn)

    async def job_now(memory: Memory):
        return await memory.job(job.user_id, job.id)

    scripted_llm.stall(60, '{"facts": []}')
    worker = subprocess.Popen([MNEMO, "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    processes.append(worker)
    wait_until(lambda: scripted_llm.chat_requests(), 20, "the worker's model call")
    assert in_store(data, embedder, job_now).status == JobStatus.CLAIMED
    worker.send_signal(signal.SIGTERM)
    output = worker.communicate(timeout=15)[0].decode()
    assert worker.returncode == 0, output
    given_back = in_store(data, embedder, job_now)
    assert (given_back.status, given_back.attempts, given_back.claimed_by) == (JobStatus.PENDING, 0, None)

    scripted_llm.reply_json(extraction(FACTS[0]))
    once = subprocess.run([MNEMO, "worker", "--once"], env=env, capture_output=True, text=True, timeout=30)
    assert once.returncode == 0 and "Processed 1 job." in once.stdout, once.stdout + once.stderr
    assert in_store(data, embedder, job_now).status == JobStatus.DONE

    async def texts(memory: Memory):
        return [f.text for f in await memory.list(Scope(job.user_id, all_agents=True))]

    assert in_store(data, embedder, texts) == [FACTS[0]]
