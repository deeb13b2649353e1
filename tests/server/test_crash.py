"""A real `mnemo serve` killed mid-job loses no turn and learns none twice; `mnemo worker` gives
back the job in hand when stopped. Both run as the installed script, in processes of their own."""

from __future__ import annotations

import signal
import subprocess
from collections import Counter

import pytest

from mnemo.domain import JobStatus, Scope, Turn
from mnemo.memory import Memory
from tests.helpers import extraction, in_store
from tests.server.api import client_for, ok, submit
from tests.server.processes import MNEMO, Serve, environment, wait_until

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

FACTS = [
    "I keep bees on my balcony",
    "I play the oboe in a community orchestra",
    "I am allergic to penicillin",
    "My passport expires in 2031",
]


def jobs(client) -> list[dict]:
    return ok(client.get("/v1/jobs", params={"limit": 200}))["items"]


@pytest.mark.citus_ci
def test_killing_the_server_mid_job_loses_no_turn_and_doubles_no_fact(
    tmp_path, scripted_llm, database_url, processes
):
    env = environment(tmp_path / "data", scripted_llm, database_url)
    scripted_llm.stall(60, '{"facts": []}')  # the first job's model call hangs: it stays claimed
    first = Serve(env, tmp_path / "first.log")
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
    second = Serve(env, tmp_path / "second.log")
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
    second.stop()
    assert "Application shutdown complete" in second.log.read_text()


def test_a_stopped_worker_gives_its_job_back_and_the_next_one_learns_it(
    tmp_path, scripted_llm, embedder, database_url, processes
):
    data = tmp_path / "data"
    env = {**environment(data, scripted_llm, database_url), "MNEMO_JOBS__LEASE_SECONDS": "60"}

    async def queue_turn(memory: Memory):
        user = await memory.accounts.user("local")
        return await memory.submit(Turn.of(Scope(user.id), ("user", FACTS[0]), ("assistant", "Lovely!")))

    job = in_store(data, embedder, queue_turn, database_url)

    async def job_now(memory: Memory):
        return await memory.job(job.user_id, job.id)

    scripted_llm.stall(60, '{"facts": []}')
    worker = subprocess.Popen([MNEMO, "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    processes.append(worker)
    wait_until(lambda: scripted_llm.chat_requests(), 20, "the worker's model call")
    assert in_store(data, embedder, job_now, database_url).status == JobStatus.CLAIMED
    worker.send_signal(signal.SIGTERM)
    output = worker.communicate(timeout=15)[0].decode()
    assert worker.returncode == 0, output
    given_back = in_store(data, embedder, job_now, database_url)
    assert (given_back.status, given_back.attempts, given_back.claimed_by) == (JobStatus.PENDING, 0, None)

    scripted_llm.reply_json(extraction(FACTS[0]))
    once = subprocess.run([MNEMO, "worker", "--once"], env=env, capture_output=True, text=True, timeout=30)
    assert once.returncode == 0 and "Processed 1 job." in once.stdout, once.stdout + once.stderr
    assert in_store(data, embedder, job_now, database_url).status == JobStatus.DONE

    async def texts(memory: Memory):
        return [f.text for f in await memory.list(Scope(job.user_id, all_agents=True))]

    assert in_store(data, embedder, texts, database_url) == [FACTS[0]]
