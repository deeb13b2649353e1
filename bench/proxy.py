"""The chat proxy's own overhead: recall + injection + forwarding + storing the turn.

    .venv/bin/python bench/proxy.py [--requests 400] [--seconds 20] [--facts 1000] [--clients 1 16]
                                    [--database-url URL] [--json]

Three processes on loopback: the scripted OpenAI-compatible upstream
(tests/fakes/openai_server.py, answering at once), mnemo's HTTP server (uvicorn,
the extraction worker off: learning happens after the reply and is not part of
the request path), and this one, the clients. mnemo's store is a SQLite file in
a temporary directory, or the PostgreSQL database that --database-url names
(a `postgresql://` URL; its rows stay). The user is seeded first with --facts
facts (synthetic sentences, really embedded, spread over 60 days).

For 1 and 16 concurrent clients (--clients) it times, in the same run, a
direct call to the upstream and the same question through mnemo (non-streamed, then
streamed: the time to the end of the stream). Each row stops after --requests
requests or --seconds seconds, whichever comes first, after a short warm-up.
Overhead is proxied minus direct, per percentile; turns/s is the timed
requests over the time from the first one's start to the last one's end.
Last, the user's memory is switched off and the non-streamed rows run again:
what is left is the cost of the extra hop alone (auth, parsing, forwarding),
without recall or storing. `--modes` picks the rows. Each row also reports
the CPU time mnemo's server process spent per proxied request (all of its
threads, user + system, over every request of the row, warm-up included): the
cost of a turn, which unlike latency does not depend on what else the two
cores are doing, and the server's peak resident memory so far (VmHWM). Nothing
is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2

from bench.facts import make_questions
from bench.proxy_setup import MODEL, free_port, log, seed, spawn, switch_memory_off

CLIENTS = (1, 16)
MODES = ("plain", "stream", "no-mem")
WARMUP = 20


async def one(client: httpx2.AsyncClient, url: str, question: str, stream: bool) -> tuple[float, int] | None:
    """(milliseconds to the end of the body, facts recalled), or None for a failed request."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": question}], "stream": stream}
    t = time.perf_counter()
    try:
        async with client.stream("POST", url, json=body) as reply:
            async for _ in reply.aiter_raw():
                pass
    except httpx2.HTTPError as exc:
        log(f"{url}: {exc!r}")
        return None
    if reply.status_code != 200:
        log(f"{url} answered {reply.status_code}")
        return None
    return (time.perf_counter() - t) * 1000, int(reply.headers.get("x-mnemo-recalled", 0))


async def load(url: str, token: str, clients: int, stream: bool, args, rng: random.Random) -> dict:
    """`clients` loops asking one question after another; latencies of all of them after a warm-up."""
    questions = make_questions(rng, 500)
    headers = {"Authorization": f"Bearer {token}"}
    ms: list[float] = []
    recalled: list[int] = []
    span = [float("inf"), 0.0]  # the first timed request's start, the last one's end
    errors, sent = [0], [0]
    deadline = time.monotonic() + args.seconds
    budget = {"left": WARMUP + args.requests}

    async def loop(client: httpx2.AsyncClient) -> None:
        while budget["left"] > 0 and time.monotonic() < deadline:
            budget["left"] -= 1
            warm = budget["left"] >= args.requests
            start = time.perf_counter()
            sent[0] += 1
            result = await one(client, url, rng.choice(questions), stream)
            if result is None:
                errors[0] += 1
            elif not warm:
                ms.append(result[0])
                recalled.append(result[1])
                span[0], span[1] = min(span[0], start), max(span[1], time.perf_counter())

    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(headers=headers, limits=limits, timeout=60) as client:
        await asyncio.gather(*(loop(client) for _ in range(clients)))
    return {
        "n": len(ms),
        "errors": errors[0],
        "sent": sent[0],
        "p50": float(np.percentile(ms, 50)) if ms else float("nan"),
        "p99": float(np.percentile(ms, 99)) if ms else float("nan"),
        "recalled": float(np.mean(recalled)) if recalled else 0.0,
        "per_s": len(ms) / (span[1] - span[0]) if ms else 0.0,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, all threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_mib(pid: int) -> float:
    """The most resident memory a process has held so far (VmHWM, Linux /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def measure(upstream: str, mnemo: str, token: str, args, memory_off, server_pid: int) -> list[dict]:
    rng = random.Random(args.seed)
    rows = []
    for mode in args.modes:
        if mode == "no-mem":
            await memory_off()
        for clients in args.clients:
            stream = mode == "stream"
            direct = await load(f"{upstream}/chat/completions", "unused", clients, stream, args, rng)
            cpu = cpu_seconds(server_pid)
            proxied = await load(f"{mnemo}/v1/chat/completions", token, clients, stream, args, rng)
            proxied["cpu_ms"] = (cpu_seconds(server_pid) - cpu) * 1000 / max(proxied["sent"], 1)
            proxied["server_peak_mib"] = peak_mib(server_pid)
            rows.append(
                {
                    "mode": mode,
                    "clients": clients,
                    "direct": direct,
                    "proxied": proxied,
                    "overhead_p50": proxied["p50"] - direct["p50"],
                    "overhead_p99": proxied["p99"] - direct["p99"],
                }
            )
            overhead, cpu_ms = rows[-1]["overhead_p50"], proxied["cpu_ms"]
            log(f"{mode} x{clients}: overhead p50 {overhead:.1f} ms, {cpu_ms:.1f} ms CPU per request")
    return rows


def table(rows: list[dict]) -> str:
    head = (
        f"{'mode':<7}{'clients':>8}{'n':>6}{'direct p50':>12}{'p99':>8}{'proxied p50':>13}{'p99':>8}"
        f"{'turns/s':>9}{'overhead p50':>14}{'p99':>8}{'CPU ms':>8}{'peak MiB':>10}{'recalled':>10}"
        f"{'errors':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        d, p = r["direct"], r["proxied"]
        lines.append(
            f"{r['mode']:<7}{r['clients']:>8}{p['n']:>6}{d['p50']:>12.1f}{d['p99']:>8.1f}"
            f"{p['p50']:>13.1f}{p['p99']:>8.1f}{p['per_s']:>9.1f}{r['overhead_p50']:>14.1f}{r['overhead_p99']:>8.1f}"
            f"{p['cpu_ms']:>8.1f}{p['server_peak_mib']:>10.0f}"
            f"{p['recalled']:>10.1f}{d['errors'] + p['errors']:>8}"
        )
    return "\n".join(lines) + (
        "\n(milliseconds; overhead = proxied - direct at the same percentile; CPU ms = mnemo's server"
        " process per proxied request; peak MiB = its most resident memory so far;"
        " no-mem: the user's memory switched off, so no recall and no stored turn)"
    )


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="timed requests per row (default 400)")
    parser.add_argument("--seconds", type=float, default=20.0, help="time limit per row (default 20)")
    parser.add_argument("--facts", type=int, default=1000, help="facts seeded for the user (default 1000)")
    parser.add_argument("--clients", type=int, nargs="+", default=CLIENTS, help="concurrent clients (1 16)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=MODES, help="rows to run (all three)")
    parser.add_argument("--database-url", help="mnemo's PostgreSQL database (default: a SQLite file)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> list[dict]:
    """Seed the store, start the upstream and mnemo, measure; the rows."""
    url = args.database_url
    with tempfile.TemporaryDirectory(prefix="mnemo-proxy-bench-") as tmp:
        t = time.perf_counter()
        user_id, token = asyncio.run(seed(Path(tmp), url, args.facts, random.Random(args.seed)))
        log(f"seeded {args.facts} facts in {time.perf_counter() - t:.1f}s")
        upstream_proc = spawn("--serve-upstream")
        upstream = upstream_proc.stdout.readline().strip()
        port = free_port()
        env = {
            "MNEMO_DATA_DIR": tmp,
            "MNEMO_UPSTREAM_BASE_URL": upstream,
            "MNEMO_UPSTREAM_MODEL": MODEL,
            "MNEMO_WORKER": "false",
            # no worker learns here, so every turn stays queued: no cap on how many
            "MNEMO_JOBS__MAX_QUEUED_PER_USER": "0",
            **({"MNEMO_DATABASE_URL": url} if url else {}),
        }
        mnemo_proc = spawn("--serve-mnemo", str(port), env=env)
        mnemo = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx2.get(f"{mnemo}/healthz").status_code == 200:
                        break
                except httpx2.HTTPError:
                    if time.monotonic() > deadline or mnemo_proc.poll() is not None:
                        raise
                time.sleep(0.1)
            memory_off = functools.partial(switch_memory_off, Path(tmp), url, user_id)
            return asyncio.run(measure(upstream, mnemo, token, args, memory_off, mnemo_proc.pid))
        finally:
            for proc in (mnemo_proc, upstream_proc):
                proc.terminate()
                proc.wait(timeout=30)


def main() -> None:
    args = options()
    rows = run(args)
    out = {"facts": args.facts, "cpus": os.cpu_count(), "rows": rows}
    print(table(rows))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
