"""SIGKILL, again and again, at seeded random points: `mnemo serve` (with its worker) and
`mnemo worker` while they learn from turns, then `mnemo import`, `mnemo backfill --apply` and
`mnemo reindex` mid-run. After every restart (and the interrupted command finished by its resume
path) every turn is learnt exactly once, every job is done with one attempt more per kill that
caught it in hand, no fact is lost or doubled, and each user's audit chain verifies.

The scripted model is the content-based Learner (a turn's user message is its fact), so replies
do not depend on the order jobs run in. A kill is armed for the k-th model (or embedding) request
from then on, k drawn from a seeded generator: it lands while that request is in flight. Every
process uses the scripted server's embeddings (fast to start; reindex switches model name).

Default run (CI): 6 kills on each backend; MNEMO_LONG_TESTS=1: 22 on both.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemo.domain import JobStatus, Scope, SourceKind, Status
from tests.fakes.learner import Learner
from tests.fakes.openai_server import CHAT_PATH, EMBEDDINGS_PATH
from tests.helpers import in_store, unrelated_facts
from tests.server.api import client_for, ok, submit
from tests.server.processes import ADMIN, MNEMO, Serve, environment, wait_until

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

LONG = os.environ.get("MNEMO_LONG_TESTS") == "1"
SEED = 20260301


@dataclass(frozen=True)
class Plan:
    """How many kills of each kind, and how much work they land in."""

    serve: int  # `mnemo serve` killed while its worker learns
    worker: int  # `mnemo worker` killed while it learns
    import_facts: int
    import_conversations: int
    backfill: int
    reindex: int
    turns_per_round: int
    facts: int  # lines of the facts file
    conversations: int  # conversations of the conversations file (one turn each)

    @property
    def kills(self) -> int:
        return (
            self.serve
            + self.worker
            + self.import_facts
            + self.import_conversations
            + self.backfill
            + self.reindex
        )


FULL = Plan(5, 5, 3, 2, 3, 3, turns_per_round=4, facts=30, conversations=20)
SHORT = Plan(1, 1, 1, 0, 1, 1, turns_per_round=3, facts=16, conversations=10)


def plan_for() -> Plan:
    return FULL if LONG else SHORT


class Killer:
    """SIGKILLs the armed process once `count` more requests reached the scripted server on
    `path`: the k-th is then in flight. `fired` is set once it did."""

    def __init__(self, scripted_llm) -> None:
        self.llm = scripted_llm
        self.fired = threading.Event()
        self.go = threading.Event()  # not before this is set (the turns are all handed over)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def _seen(self, path: str) -> int:
        return sum(1 for r in list(self.llm.requests) if r["path"] == path)

    def arm(self, process: subprocess.Popen, path: str, count: int, on_kill) -> None:
        self.disarm()
        self.fired.clear()
        self.go.clear()
        self._stop.clear()
        target = self._seen(path) + count

        def watch() -> None:
            while not self._stop.is_set() and process.poll() is None:
                if self.go.is_set() and self._seen(path) >= target:
                    process.send_signal(signal.SIGKILL)
                    process.wait(10)
                    on_kill()  # at once: before a lease runs out and another worker claims again
                    self.fired.set()
                    return
                time.sleep(0.002)

        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()

    def disarm(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class Deployment:
    """One data directory (or PostgreSQL database), the processes run on it, and what was said."""

    def __init__(self, tmp_path: Path, scripted_llm, embedder, database_url, processes) -> None:
        self.tmp = tmp_path
        self.data = tmp_path / "data"
        self.llm = scripted_llm
        self.embedder = embedder
        self.database_url = database_url
        self.processes = processes
        self.env = {
            **environment(self.data, scripted_llm, database_url),
            "MNEMO_EMBED_BASE_URL": scripted_llm.base_url,
            "MNEMO_EMBED_MODEL": "embed-a",
            "MNEMO_JOBS__LEASE_SECONDS": "4",  # longer than any job takes on a loaded machine
        }
        self.killer = Killer(scripted_llm)
        self.kills: Counter[str] = Counter()
        self.caught: set[tuple[str, int]] = set()  # (job id, attempt) a kill found in hand
        self.keys: dict[str, str] = {}
        self.said: dict[str, list[str]] = {}  # user -> what they said (each one fact)
        self.logs = 0

    def log(self, name: str) -> Path:
        self.logs += 1
        return self.tmp / f"{self.logs:03d}-{name}.log"

    def serve(self, *, worker: bool = True) -> Serve:
        env = self.env if worker else {**self.env, "MNEMO_WORKER": "false"}
        started = Serve(env, self.log("serve"))
        self.processes.append(started.process)
        return started

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = self.log(next(a for a in args if not a.startswith("-") and a != "dave"))
        with log.open("wb") as out:
            process = subprocess.Popen(
                [MNEMO, *args], env=env or self.env, stdout=out, stderr=subprocess.STDOUT
            )
        process.log = log  # type: ignore[attr-defined]
        self.processes.append(process)
        return process

    @staticmethod
    def output(process: subprocess.Popen) -> str:
        return process.log.read_text()  # type: ignore[attr-defined]

    def store(self, work):
        return in_store(self.data, self.embedder, work, self.database_url)

    def note_claimed(self, pid: int) -> None:
        """After process `pid` was killed: the jobs it had in hand (still claimed by it until their
        lease runs out; another live worker's claims are not its)."""

        async def claimed(memory):
            found = []
            for name in self.keys:
                user = await memory.accounts.find_user(name)
                found += await memory.jobs(user.id, status=JobStatus.CLAIMED, limit=1000)
            return [(j.id, j.attempts) for j in found if f":{pid}:" in (j.claimed_by or "")]

        self.caught.update(self.store(claimed))

    def retries(self, job_id: str) -> int:
        return sum(1 for j, _ in self.caught if j == job_id)

    def kill_at(
        self,
        process: subprocess.Popen,
        path: str,
        count: int,
        kind: str,
        meanwhile=lambda: None,
        then=lambda: None,
        timeout: float = 60,
    ) -> bool:
        """Arm the kill; do `meanwhile` before it may fire and `then` while it may (start the next
        process: its start overlaps the wait); wait for the kill, or for the process to finish on
        its own (False)."""
        self.killer.arm(process, path, count, lambda: self.note_claimed(process.pid))
        meanwhile()
        self.killer.go.set()
        then()
        deadline = time.monotonic() + timeout
        while not self.killer.fired.is_set() and process.poll() is None:
            assert time.monotonic() < deadline, f"{kind}: neither killed nor finished"
            time.sleep(0.01)
        self.killer.disarm()
        process.wait(10)
        if self.killer.fired.is_set() and process.returncode == -signal.SIGKILL:
            self.kills[kind] += 1
            return True
        return False

    def facts(self, name: str) -> list:
        async def work(memory):
            user = await memory.accounts.find_user(name)
            return await memory.list(Scope(user.id, all_agents=True), statuses=list(Status), limit=10_000)

        return self.store(work)


def _said(prefix: str, texts: list[str]) -> list[str]:
    return [f"{t} ({prefix})" for t in texts]


@pytest.fixture
def learner(scripted_llm) -> Learner:
    learner = Learner()

    def slowly(body):  # a model call takes a moment, so kills land while one is in flight
        time.sleep(0.03)
        return learner(body)

    scripted_llm.responder = slowly
    return learner


def test_killed_again_and_again_loses_nothing_and_doubles_nothing(
    tmp_path, scripted_llm, learner, embedder, database_url, processes
):
    plan = plan_for()
    rng = random.Random(SEED)
    d = Deployment(tmp_path, scripted_llm, embedder, database_url, processes)
    sentences = iter(unrelated_facts(2000))

    first = d.serve()
    with client_for(first, ADMIN) as admin:
        for name in ("ana", "ben", "cleo", "dave"):
            made = ok(admin.post("/v1/admin/users", json={"name": name}), 201)
            d.keys[name] = made["key"]["token"]
            d.said[name] = []
    talkers = ["ana", "ben", "cleo"]

    def say(server: Serve, n: int) -> None:
        for _ in range(n):
            name = rng.choice(talkers)
            text = next(sentences)
            with client_for(server, d.keys[name]) as client:
                queued = submit(client, text, conversation_id=f"{name}-{len(d.said[name])}")
            assert queued["queued"], queued
            d.said[name].append(text)

    # -- the server, its own worker learning, killed mid-job -------------------------------
    server = first
    for _ in range(plan.serve):
        k = rng.randint(1, plan.turns_per_round)
        started: list[Serve] = []
        d.kill_at(
            server.process,
            CHAT_PATH,
            k,
            "serve",
            meanwhile=lambda s=server: say(s, plan.turns_per_round),
            then=lambda out=started: out.append(d.serve()),
        )
        server = started[0]

    # -- a server without a worker, and `mnemo worker` killed mid-job ----------------------
    last, server = server, d.serve(worker=False)
    last.kill()
    d.kills["serve"] += 1
    d.note_claimed(last.process.pid)
    worker = d.start("worker")
    for _ in range(plan.worker):
        k = rng.randint(1, plan.turns_per_round)
        started_w: list[subprocess.Popen] = []
        d.kill_at(
            worker,
            CHAT_PATH,
            k,
            "worker",
            meanwhile=lambda: say(server, plan.turns_per_round),
            then=lambda out=started_w: out.append(d.start("worker")),
        )
        worker = started_w[0]

    finisher = worker
    for name in talkers:
        with client_for(server, d.keys[name]) as client:
            wait_until(
                lambda c=client: all(j["status"] == "done" for j in jobs_of(c)),
                60,
                f"{name}'s jobs to finish",
            )
    finisher.send_signal(signal.SIGTERM)
    assert finisher.wait(15) == 0

    # -- `mnemo import` of facts, killed mid-file, run again -------------------------------
    facts_file = tmp_path / "facts.jsonl"
    imported = [next(sentences) for _ in range(plan.facts)]
    facts_file.write_text("".join(json.dumps({"text": t}) + "\n" for t in imported))
    importing = ("--user", "dave", "import", str(facts_file))
    for _ in range(plan.import_facts):
        d.kill_at(d.start(*importing), EMBEDDINGS_PATH, rng.randint(1, plan.facts // 3), "import")
    assert d.start(*importing).wait(60) == 0

    # -- `mnemo import` of conversations, killed after a random time, run again ------------
    chats = tmp_path / "chats.jsonl"
    spoken = [next(sentences) for _ in range(plan.conversations)]
    chats.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"talk-{i}",
                    "messages": [{"role": "user", "content": t}, {"role": "assistant", "content": "Noted."}],
                }
            )
            + "\n"
            for i, t in enumerate(spoken)
        )
    )
    importing = ("--user", "dave", "import", str(chats))
    for _ in range(plan.import_conversations):
        process = d.start(*importing)
        time.sleep(rng.uniform(0.3, 1.2))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            d.kills["import"] += 1
    assert d.start(*importing).wait(60) == 0

    # -- `mnemo backfill --apply` learns dave's conversations, killed, resumed ---------------
    fresh = ("backfill", "--apply", "--users", "dave", "--batch-size", "2")
    run = d.start(*fresh)
    for _ in range(3 * plan.backfill):
        if d.kills["backfill"] == plan.backfill:
            break
        if d.kill_at(run, CHAT_PATH, rng.randint(1, 4), "backfill"):
            run = d.start("backfill", "--apply", "--resume")
        elif run.returncode == 1 and "no interrupted backfill" in d.output(run).lower():
            run = d.start(*fresh)  # killed before it saved its run: start again (done turns are skipped)
        else:
            break
    if run.wait(120) == 1 and "no interrupted backfill" in d.output(run).lower():
        run = d.start(*fresh)
    assert run.wait(120) == 0, d.output(run)
    d.said["dave"] = spoken

    # -- `mnemo reindex` onto another model, killed between batches, run again -------------
    other = {**d.env, "MNEMO_EMBED_MODEL": "embed-b"}
    reindexing = ("reindex", "--batch-size", "2")
    for _ in range(plan.reindex):
        d.kill_at(d.start(*reindexing, env=other), EMBEDDINGS_PATH, rng.randint(1, 10), "reindex")
    assert d.start(*reindexing, env=other).wait(60) == 0

    # -- nothing lost, nothing doubled ------------------------------------------------------
    assert sum(d.kills.values()) >= plan.kills - plan.import_conversations, d.kills
    assert d.caught  # some kills did catch a job in hand
    print(f"kills: {dict(d.kills)}; jobs caught in hand: {len(d.caught)}")
    for name in talkers:
        with client_for(server, d.keys[name]) as client:
            done = jobs_of(client)
            assert len(done) == len(d.said[name])
            assert all(j["status"] == "done" and not j["result"]["problems"] for j in done)
            assert {j["id"]: j["attempts"] for j in done} == {j["id"]: 1 + d.retries(j["id"]) for j in done}
            facts = ok(client.get("/v1/memories", params={"status": "all", "limit": 200}))["items"]
            assert Counter(f["text"] for f in facts) == Counter(d.said[name])
            assert {f["status"] for f in facts} == {"active"}
            assert ok(client.get("/v1/audit/verify"))["ok"]
            asked = [learner.extracted[t] for t in d.said[name]]
            assert min(asked) >= 1 and sum(asked) <= sum(j["attempts"] for j in done)

    async def conversations(memory):
        user = await memory.accounts.find_user("dave")
        return await memory.store.list_conversations(user.id, limit=1000)

    stored = d.store(conversations)  # each conversation once, with its two messages once
    assert sorted((len(c.messages), c.messages[0].content) for c in stored) == sorted((2, t) for t in spoken)
    dave = d.facts("dave")
    assert Counter(f.text for f in dave) == Counter(imported + spoken)
    assert {f.text for f in dave if f.source.kind == SourceKind.IMPORT} == set(imported)
    assert all(learner.extracted[t] >= 1 for t in spoken)
    with client_for(server, d.keys["dave"]) as client:
        assert ok(client.get("/v1/audit/verify"))["ok"]

    async def models(memory):
        return {n: await memory.store.vector_models((await memory.accounts.find_user(n)).id) for n in d.keys}

    counts = {n: len(d.facts(n)) for n in d.keys}
    assert d.store(models) == {n: {"embed-a": c, "embed-b": c} for n, c in counts.items()}
    server.stop()


def jobs_of(client) -> list[dict]:
    return ok(client.get("/v1/jobs", params={"limit": 200}))["items"]
