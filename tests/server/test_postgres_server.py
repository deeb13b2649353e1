"""Several `mnemo serve` processes on one PostgreSQL (a server, or a Citus cluster's coordinator),
each with its worker: they share the queue without handing out a job twice, and learn each
person's turns one at a time, in order."""

from __future__ import annotations

import json
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import cycle

import httpx2
import pytest

from mnemo.domain import JobStatus, Scope
from mnemo.memory import Memory
from tests.helpers import extraction, in_store
from tests.selection import ANY_POSTGRESQL
from tests.server.api import client_for, ok, submit
from tests.server.processes import ADMIN, Serve, environment, wait_until

# `mnemo serve` processes sharing a database: PostgreSQL's, on one server or on Citus
pytestmark = [ANY_POSTGRESQL, pytest.mark.slow]

# per person: what they say, in order; restating an earlier fact must not store it twice
SAID = [
    "I keep bees on my balcony",
    "I play the oboe in a community orchestra",
    "I am allergic to penicillin",
    "My passport expires in 2031",
    "I keep bees on my balcony",
    "I am learning Portuguese",
    "My sister lives in Porto",
    "I play the oboe in a community orchestra",
    "I cycle to work every day",
    "I keep bees on my balcony",
]
PEOPLE = ["local", "ana", "bruno", "chen"]


def answer(body: dict) -> str | None:
    """The scripted model: extract what the user said; add every new fact beside related ones."""
    prompt = body["messages"][-1]["content"]
    if "New facts:" in prompt:
        count = len(re.findall(r"^N\d+\. ", prompt, re.MULTILINE))
        return (
            '{"decisions": ['
            + ", ".join(f'{{"new": {n}, "action": "add", "target": null}}' for n in range(1, count + 1))
            + "]}"
        )
    said = re.search(r"^\[1\] User: (?:Note for the record: )?(.+?)\.?$", prompt, re.MULTILINE)
    return None if said is None else json.dumps(extraction(said.group(1)))


@pytest.mark.citus_ci
def test_two_servers_on_one_database_learn_every_turn_once(
    tmp_path, scripted_llm, embedder, database_url, processes
):
    scripted_llm.responder = answer
    env = {**environment(tmp_path / "data", scripted_llm, database_url), "MNEMO_JOBS__LEASE_SECONDS": "60"}
    servers = [Serve(env, tmp_path / f"serve-{i}.log") for i in range(2)]
    processes.extend(s.process for s in servers)
    tokens = {"local": servers[0].token}
    assert tokens["local"] and servers[1].token is None  # one first start between them
    with httpx2.Client(base_url=servers[1].base_url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
        for name in PEOPLE[1:]:
            tokens[name] = ok(admin.post("/v1/admin/users", json={"name": name}), 201)["key"]["token"]

    # every person's turns, interleaved across people, sent alternately to either server at once
    sends = [(name, i) for i in range(len(SAID)) for name in PEOPLE]
    clients = {
        (name, n): client_for(server, tokens[name]) for name in PEOPLE for n, server in enumerate(servers)
    }

    def send(job: tuple[tuple[str, int], int]) -> dict:
        (name, i), n = job
        return submit(clients[name, n], f"Note for the record: {SAID[i]}.", conversation_id=f"{name}-{i}")

    try:
        with ThreadPoolExecutor(8) as pool:
            queued = list(pool.map(send, zip(sends, cycle([0, 1]), strict=False)))
    finally:
        for c in clients.values():
            c.close()
    assert all(q["queued"] for q in queued)

    async def everything(memory: Memory):
        out = {}
        for name in PEOPLE:
            user = await memory.accounts.user(name)
            scope = Scope(user.id, all_agents=True)
            out[name] = (
                await memory.jobs(user.id, limit=100),
                await memory.list(scope, statuses=None, limit=100),
                await memory.events(user.id),
                (await memory.verify_audit(user.id)).ok,
            )
        return out

    def settled():
        found = in_store(tmp_path / "data", embedder, everything, database_url)
        jobs = [j for js, *_ in found.values() for j in js]
        return found if len(jobs) == len(sends) and all(j.status == JobStatus.DONE for j in jobs) else None

    found = wait_until(settled, 60, "every turn to be learnt from")
    workers = Counter()
    for name, (jobs, facts, events, verified) in found.items():
        assert all(j.attempts == 1 for j in jobs), [(j.attempts, j.last_error) for j in jobs]
        workers.update(j.claimed_by for j in jobs)
        assert Counter(f.text for f in facts) == Counter(set(SAID)), name  # each fact once
        actions = Counter(e.action.value for e in events)
        assert actions == {"create": len(set(SAID)), "reinforce": len(SAID) - len(set(SAID))}, name
        assert verified
        # learnt in the order the turns came (job ids are time-ordered): each fact was created
        # by the first turn that said it, and the later ones reinforced it
        first: dict[str, str] = {}
        for job in sorted(jobs, key=lambda j: j.id):
            first.setdefault(SAID[int(job.conversation_id.rsplit("-", 1)[1])], job.conversation_id)
        text_of = {f.id: f.text for f in facts}
        assert [text_of[e.fact_id] for e in events if e.action.value == "create"] == list(first)
        assert {f.text: f.source.conversation_id for f in facts} == first
    assert len(workers) == 2  # both servers' workers took part
    assert not (tmp_path / "data" / "mnemo.db").exists()  # the postgresql:// URL chose the store
    extractions = [
        r for r in scripted_llm.chat_requests() if "New facts:" not in r["messages"][-1]["content"]
    ]
    assert len(extractions) == len(sends)  # no turn was extracted twice
    for server in servers:
        server.stop()
        assert "Traceback" not in server.log.read_text(), server.log.read_text()
