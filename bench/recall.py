"""Recall latency and ingest throughput of mnemo, next to a Khoj-style baseline.

    .venv/bin/python bench/recall.py [--quick] [--json] [--full-embed]

Stores: one user with 10k facts, one with 100k, and 1,000 users with 100 each
(`--quick`: the 10k and 1,000 x 100 stores, fewer queries, a smaller ingest).
Facts and questions are synthetic first-person sentences (bench/facts.py).

Vectors. Embedding 200k sentences with the local model would take the 2-core
machine a quarter of an hour, so by default only a pool of ~5,000 real
sentences is embedded (one per template, leading filler and variant of the
second filler), and each stored fact gets the vector of its pool sentence
plus Gaussian noise (sigma 0.02 per dimension, renormalised: cosine ~0.93 to
the pool vector). Latency depends on how many vectors there are, not on which.
`--full-embed` embeds every fact for real instead. Questions are always
embedded for real, as is everything in the ingest measurement.

Time. Facts are created (and last seen) at random times over the 60 days
before a fixed NOW; stores and Memory get a clock that always says NOW, so
"the last 7 days" means the same thing on every run.

Recall is timed two ways, 200 queries each after 10 warm-up queries:
excluding the query embedding (the vector is computed beforehand and passed
in: `Recaller.recall(vector=...)`, which skips the memory on/off check) and
including it (`Memory.recall(query, scope)`, the public path). The baseline
(bench/khoj_baseline.py) answers the same queries over the same file and
vectors, and has its query embedded by the same embedder in the "incl." rows.
The "floor" row is the least any recall by meaning can cost: the user's
vectors already in a numpy matrix, one product with the query vector and its
top 20 (argpartition), nothing read from SQLite, no other arm, no ranking;
"x floor" is a row's p50 over the floor's in the same store and way. The
"mnemo-rrf-fallback" row answers the same questions with recall's fallback
(`ranker="rrf"`: the arms at fusion's depths, fused by rank, no model): its
difference from mnemo's "excl." row is what the learned ranker costs.

With 1,000 users each query goes to a random user. mnemo keeps each user's
vectors in an in-memory matrix loaded on that user's first search, so these
"mixed" rows hold cold (first search: load from SQLite) and warm users; the
share of cold ones is printed, and a "warm" row repeats the same queries once
every user involved is loaded. On the 100k store it also reports the share of
an exact scan's top 20 that the vector search (8-bit codes first past
COARSE_FROM vectors, see store/vectors.py) returns, for the same questions.
On the one-user stores, last, single `Memory.add` calls (100; dedupe lookup,
embedding, commit) are timed, each beside embedding the same text alone.
Nothing is asserted: this prints numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import SynthFact, make_facts, make_questions, pool_sentences
from bench.khoj_baseline import KhojBaseline
from mnemo.domain import Change, Scope, Source, SourceKind
from mnemo.memory import Memory
from mnemo.providers.embed import LocalEmbedder
from mnemo.recall.recaller import Recaller
from mnemo.store.sqlite import SQLiteStore
from mnemo.store.vectors import COARSE_FROM, VectorCache
from mnemo.write import changes

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SPREAD = timedelta(days=60)
NOISE = 0.02
VARIANTS = 4
SEED_BATCH = 5000
INGEST_BATCH = 500
EMBEDDING = {"excl": "excluded", "incl": "included"}


def clock() -> datetime:
    return NOW


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Plan:
    stores: list[tuple[str, int, int]]  # (name, users, facts per user)
    queries: int
    warmup: int
    ingest: int
    adds: int
    full_embed: bool
    seed: int

    @classmethod
    def make(cls, quick: bool, full_embed: bool, seed: int) -> Plan:
        stores = [("10k", 1, 10_000), ("100k", 1, 100_000), ("1000x100", 1000, 100)]
        if quick:
            return cls([stores[0], stores[2]], 40, 10, 1000, 100, full_embed, seed)
        return cls(stores, 200, 10, 5000, 100, full_embed, seed)


class Vectors:
    """Vectors for synthetic facts: pool vector plus noise, or real embeddings."""

    def __init__(self, embedder: LocalEmbedder, full: bool, rng: random.Random) -> None:
        self.embedder, self.full = embedder, full
        self.noise = np.random.default_rng(rng.randrange(2**32))
        self.pool: dict = {}
        if not full:
            sentences = pool_sentences(rng, VARIANTS)
            t = time.perf_counter()
            matrix = embedder.embed_sync(list(sentences.values()))
            self.pool_rate = len(sentences) / (time.perf_counter() - t)
            self.pool = dict(zip(sentences, matrix, strict=True))
            log(f"embedded a pool of {len(sentences)} sentences ({self.pool_rate:.0f}/s)")

    def __call__(self, facts: list[SynthFact]) -> np.ndarray:
        if self.full:
            return self.embedder.embed_sync([f.text for f in facts])
        base = np.stack([self.pool[f.key] for f in facts])
        noisy = base + self.noise.normal(0.0, NOISE, base.shape).astype(np.float32)
        return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def import_changes(
    scope: Scope, texts: Sequence[str], vectors: Sequence[np.ndarray], times: Sequence[datetime], model: str
) -> list[Change]:
    """The changes a bulk import commits: one new fact per (text, vector, time)."""
    return [
        changes.create(
            changes.new_fact(scope, text, now=at, source=Source(SourceKind.IMPORT), embedding_model=model),
            v,
            "import",
        )
        for text, v, at in zip(texts, vectors, times, strict=True)
    ]


@dataclass
class Built:
    name: str
    store: SQLiteStore
    memory: Memory
    users: list[str]
    facts: int
    commit_s: float
    build_s: float


async def build(
    name: str,
    users: int,
    per_user: int,
    path: Path,
    vectors: Vectors,
    embedder: LocalEmbedder,
    rng: random.Random,
) -> Built:
    """Seed through SQLiteStore.commit, in batches of SEED_BATCH changes (per user)."""
    t0 = time.perf_counter()
    store = SQLiteStore(path, clock=clock)
    await store.open()
    memory = Memory(store, embedder, clock=clock)
    taken: set[str] = set()
    user_ids, commit_s = [], 0.0
    for u in range(users):
        user = await store.ensure_user(f"{name}-user-{u}")
        user_ids.append(user.id)
        scope = Scope(user.id)
        for start in range(0, per_user, SEED_BATCH):
            facts = make_facts(rng, min(SEED_BATCH, per_user - start), taken, VARIANTS)
            vecs = vectors(facts)
            times = [NOW - SPREAD * rng.random() for _ in facts]
            batch = import_changes(scope, [f.text for f in facts], vecs, times, embedder.model_name)
            t = time.perf_counter()
            await store.commit(user.id, batch, NOW)
            commit_s += time.perf_counter() - t
    built = Built(name, store, memory, user_ids, users * per_user, commit_s, time.perf_counter() - t0)
    log(f"built {name}: {built.facts} facts in {built.build_s:.1f}s (commits {commit_s:.1f}s)")
    return built


@dataclass
class Timing:
    ms: list[float]
    hits: list[int]
    cold: list[bool] = field(default_factory=list)

    def p(self, q: float, only: bool | None = None) -> float:
        ms = self.ms if only is None else [m for m, c in zip(self.ms, self.cold, strict=True) if c == only]
        return float(np.percentile(ms, q)) if ms else float("nan")


async def timed(call, items) -> Timing:
    out = Timing([], [])
    for item in items:
        t = time.perf_counter()
        hits = await call(*item)
        out.ms.append((time.perf_counter() - t) * 1000)
        out.hits.append(len(hits))
    return out


async def recall_bench(b: Built, plan: Plan, embedder: LocalEmbedder, rng: random.Random) -> dict:
    """All recall rows for one store: mnemo and the baseline, excl. and incl. the query embedding."""
    base = KhojBaseline(b.store._conn, embedder.model_name)
    questions = make_questions(rng, plan.warmup + plan.queries)
    qvec = dict(zip(questions, embedder.embed_sync(questions), strict=True))
    loaded: set[str] = set()  # users whose vectors mnemo has already searched (cached)

    def items(n: int) -> list[tuple[str, str]]:
        return [(rng.choice(b.users), q) for q in rng.sample(questions, n)]

    async def mnemo_excl(uid, q):
        return await b.memory.recaller.recall(Scope(uid), q, vector=qvec[q])

    recaller = b.memory.recaller
    fusing = Recaller(
        recaller.store, embedder, recaller.settings.model_copy(update={"ranker": "rrf"}), recaller.clock
    )

    async def fusion_excl(uid, q):  # the fallback: the arms at fusion's depths, fused by rank, no model
        return await fusing.recall(Scope(uid), q, vector=qvec[q])

    async def mnemo_incl(uid, q):
        return await b.memory.recall(q, Scope(uid))

    async def base_excl(uid, q):
        return base.recall(uid, qvec[q], NOW)

    async def base_incl(uid, q):
        return base.recall(uid, (await embedder.embed([q]))[0], NOW)

    matrices: dict[str, np.ndarray] = {}  # the floor's: each user's vectors, in memory before any timing

    def scan(uid: str, vector: np.ndarray) -> list[int]:
        """The floor: one scan of the user's vectors and their top 20, nothing else."""
        scores = matrices[uid] @ vector
        top = np.argpartition(-scores, min(20, len(scores) - 1))[:20]
        return top[np.argsort(-scores[top])].tolist()

    async def floor_excl(uid, q):
        return scan(uid, qvec[q])

    async def floor_incl(uid, q):
        return scan(uid, (await embedder.embed_queries([q]))[0])

    async def mnemo_pass(call, work) -> Timing:
        cold = [uid not in loaded for uid, _ in work]
        t = await timed(call, work)
        loaded.update(uid for uid, _ in work)
        t.cold = cold
        return t

    rows: dict[str, Timing] = {}
    first = await mnemo_pass(mnemo_excl, items(1))  # on a one-user store: loads the vector cache
    for embed, (m_call, b_call, f_call) in {
        "excl": (mnemo_excl, base_excl, floor_excl),
        "incl": (mnemo_incl, base_incl, floor_incl),
    }.items():
        await mnemo_pass(m_call, items(plan.warmup))
        await timed(b_call, items(plan.warmup))
        work = items(plan.queries)
        for uid in {uid for uid, _ in work} - matrices.keys():
            blobs = b.store._load_vectors(uid, embedder.model_name).vectors
            matrices[uid] = np.frombuffer(b"".join(blobs), np.float32).reshape(len(blobs), -1)
        rows[f"mnemo/{embed}"] = await mnemo_pass(m_call, work)
        rows[f"khoj-baseline/{embed}"] = await timed(b_call, work)
        rows[f"floor/{embed}"] = await timed(f_call, work)
        if embed == "excl":  # what the learned ranker costs: the same questions fused by rank instead
            await timed(fusion_excl, items(plan.warmup))
            rows["mnemo-rrf-fallback/excl"] = await timed(fusion_excl, work)
        if len(b.users) > 1:
            rows[f"mnemo/{embed}/warm"] = await mnemo_pass(m_call, work)  # every user now cached
        log(f"{b.name}: timed {embed}. embedding")
    out: dict = {"first_recall_ms": first.ms[0], "rows": rows}
    if len(b.users) == 1:
        if b.facts >= COARSE_FROM:
            out["exact_top20_found"] = top20_found(b, list(qvec.values()), embedder.model_name)
        out["adds"] = await add_bench(b, plan, embedder, rng)
    return out


def top20_found(b: Built, queries: list[np.ndarray], model: str) -> float:
    """The share of the exact scan's top 20 that the store's vector search (8-bit codes first,
    past COARSE_FROM vectors) returns, over the questions."""
    columns = b.store._load_vectors(b.users[0], model)
    fast, exact = VectorCache(), VectorCache(coarse_from=10**12)
    key = (b.users[0], model)
    found = []
    for v in queries:
        got = fast.search(key, 0, lambda: columns, v, 20, None)
        want = exact.search(key, 0, lambda: columns, v, 20, None)
        found.append(len({r for r, _ in got} & {r for r, _ in want}) / len(want))
    share = float(np.mean(found))
    log(f"{b.name}: the vector search found {share:.4f} of the exact top 20")
    return share


async def add_bench(b: Built, plan: Plan, embedder: LocalEmbedder, rng: random.Random) -> dict:
    """Single `Memory.add` calls for the store's one (cached) user, each beside embedding its text."""
    texts = [f"{f.text} (added {i})" for i, f in enumerate(make_facts(rng, plan.adds, set(), 1))]
    scope = Scope(b.users[0])
    embed_ms, add_ms = [], []
    for text in texts:
        t = time.perf_counter()
        await embedder.embed([text])
        embed_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await b.memory.add(scope, text)
        add_ms.append((time.perf_counter() - t) * 1000)
    log(f"{b.name}: {len(texts)} single adds")
    return {
        "n": len(texts),
        "add_p50_ms": float(np.median(add_ms)),
        "embed_p50_ms": float(np.median(embed_ms)),
    }


async def ingest_bench(plan: Plan, embedder: LocalEmbedder, tmp: Path, rng: random.Random) -> dict:
    """Real embedding + batched commits into a fresh store, then single Memory.add calls."""
    store = SQLiteStore(tmp / "ingest.db", clock=clock)
    await store.open()
    memory = Memory(store, embedder, clock=clock)
    scope = Scope((await memory.accounts.user("ingest")).id)
    texts = [f.text for f in make_facts(rng, plan.ingest + plan.adds, set(), 1)]
    bulk, single = texts[: plan.ingest], texts[plan.ingest :]
    embed_s = commit_s = 0.0
    for start in range(0, len(bulk), INGEST_BATCH):
        chunk = bulk[start : start + INGEST_BATCH]
        t = time.perf_counter()
        vecs = await embedder.embed(chunk)
        embed_s += time.perf_counter() - t
        t = time.perf_counter()
        batch = import_changes(scope, chunk, vecs, [clock()] * len(chunk), embedder.model_name)
        await store.commit(scope.user_id, batch, clock())
        commit_s += time.perf_counter() - t
    t = time.perf_counter()
    for text in single:
        await memory.add(scope, text)
    add_s = time.perf_counter() - t
    await store.close()
    log(f"ingest: {len(bulk)} bulk facts in {embed_s + commit_s:.1f}s, {len(single)} adds in {add_s:.1f}s")
    return {
        "bulk_facts": len(bulk),
        "bulk_embed_s": embed_s,
        "bulk_commit_s": commit_s,
        "adds": len(single),
        "add_s": add_s,
    }


def machine() -> dict:
    import onnxruntime
    import sqlean

    cpu = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").exists()
        else ""
    )
    return {
        "cores": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnxruntime": onnxruntime.__version__,
        "sqlite": sqlean.sqlite_version,
    }


def summarise(results: dict, ingest: dict, builds: list[Built]) -> dict:
    """Flat numbers for --json and the tables."""
    rows = []
    for store, r in results.items():
        for key, t in r["rows"].items():
            method, embed, *warm = key.split("/")
            base = r["rows"][f"khoj-baseline/{embed}"]
            floor = r["rows"][f"floor/{embed}"]
            row = {
                "store": store,
                "method": method,
                "embedding": embed,
                "users": "warm" if warm else "",
                "p50_ms": t.p(50),
                "p99_ms": t.p(99),
                "vs_baseline_p50": t.p(50) / base.p(50),
                "vs_floor_p50": t.p(50) / floor.p(50),
                "mean_hits": float(np.mean(t.hits)),
                "n": len(t.ms),
            }
            if t.cold and not warm and any(t.cold):
                row.update(
                    users="mixed",
                    cold_share=float(np.mean(t.cold)),
                    cold_p50_ms=t.p(50, True),
                    warm_p50_ms=t.p(50, False),
                )
            rows.append(row)
    total = ingest["bulk_embed_s"] + ingest["bulk_commit_s"]
    ingest_rows = [
        {
            "path": f"embed (LocalEmbedder) + commit, batches of {INGEST_BATCH}",
            "n": ingest["bulk_facts"],
            "per_s": ingest["bulk_facts"] / total,
            "note": f"embedding {ingest['bulk_embed_s'] / total:.0%} of the time",
        },
        {
            "path": "Memory.add, one call per fact",
            "n": ingest["adds"],
            "per_s": ingest["adds"] / ingest["add_s"],
            "note": "dedupe lookup + embed 1 + commit 1",
        },
    ] + [
        {
            "path": f"commit only, precomputed vectors ({b.name} seeding)",
            "n": b.facts,
            "per_s": b.facts / b.commit_s,
            "note": f"batches of {min(SEED_BATCH, b.facts // len(b.users))}",
        }
        for b in builds
    ]
    first = {s: r["first_recall_ms"] for s, r in results.items()}
    adds = {s: r["adds"] for s, r in results.items() if "adds" in r}
    found = {s: r["exact_top20_found"] for s, r in results.items() if "exact_top20_found" in r}
    return {
        "recall": rows,
        "ingest": ingest_rows,
        "first_recall_ms": first,
        "adds": adds,
        "exact_top20_found": found,
    }


def make_console():
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped or redirected: don't squeeze the tables into 80 columns
        console.width = 160
    return console


def render(summary: dict, plan: Plan, info: dict, vectors_note: str) -> None:
    from rich.table import Table

    console = make_console()
    console.print(
        f"Machine: {info['cores']} cores ({info['cpu']}), Python {info['python']}, "
        f"numpy {info['numpy']}, onnxruntime {info['onnxruntime']}, SQLite {info['sqlite']}"
    )
    console.print(f"Vectors: {vectors_note}")
    table = Table(
        title=f"Recall latency ({plan.queries} queries per row after {plan.warmup} warm-up; "
        "ratio = p50 / baseline p50, same store and embedding)"
    )
    words = ("store", "method", "query embedding", "note")
    numbers = ("p50 ms", "p99 ms", "x baseline p50", "x floor p50", "hits")
    for col in (*words[:3], *numbers, words[3]):
        table.add_column(col, justify="left" if col in words else "right")
    for r in summary["recall"]:
        note = ""
        if r["users"] == "mixed":
            note = (
                f"random users, {r['cold_share']:.0%} cold (p50 cold {r['cold_p50_ms']:.2f}"
                f" / warm {r['warm_p50_ms']:.2f})"
            )
        elif r["users"] == "warm":
            note = "same queries again, every user cached"
        table.add_row(
            r["store"],
            r["method"],
            EMBEDDING[r["embedding"]],
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['vs_baseline_p50']:.2f}",
            f"{r['vs_floor_p50']:.2f}",
            f"{r['mean_hits']:.1f}",
            note,
        )
    console.print(table)
    first = ", ".join(f"{s} {ms:.0f} ms" for s, ms in summary["first_recall_ms"].items())
    console.print(f"mnemo's first recall on each store (loads that user's vectors): {first}")
    for store, share in summary["exact_top20_found"].items():
        console.print(
            f"{store} store: the vector search (8-bit codes first, then exact) found {share:.2%} of an"
            " exact scan's top 20"
        )
    for store, a in summary["adds"].items():
        console.print(
            f"single Memory.add on the {store} store: p50 {a['add_p50_ms']:.1f} ms; embedding the same text"
            f" alone {a['embed_p50_ms']:.1f} ms ({a['add_p50_ms'] / a['embed_p50_ms']:.1f}x; {a['n']} adds,"
            " interleaved)"
        )
    ingest = Table(title="Ingest throughput (real embedding where stated)")
    for col in ("path", "facts", "facts/s", "note"):
        ingest.add_column(col, justify="right" if col in ("facts", "facts/s") else "left")
    for r in summary["ingest"]:
        ingest.add_row(r["path"], str(r["n"]), f"{r['per_s']:.0f}", r["note"])
    console.print(ingest)


async def main(args: argparse.Namespace) -> dict:
    plan = Plan.make(args.quick, args.full_embed, args.seed)
    rng = random.Random(plan.seed)
    embedder = LocalEmbedder()
    embedder.embed_sync(["warm up the model"])
    vectors = Vectors(embedder, plan.full_embed, rng)
    vectors_note = (
        "every fact embedded for real (--full-embed)"
        if plan.full_embed
        else f"each fact = the real embedding of one of {len(vectors.pool)} pool sentences (same template, "
        f"leading filler and variant) + Gaussian noise (sigma {NOISE}), renormalised; questions and "
        "ingest are embedded for real; --full-embed embeds every fact"
    )
    results, builds = {}, []
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
        ingest = await ingest_bench(plan, embedder, Path(tmp), rng)
        for name, users, per_user in plan.stores:
            b = await build(name, users, per_user, Path(tmp) / f"{name}.db", vectors, embedder, rng)
            builds.append(b)
            results[name] = await recall_bench(b, plan, embedder, rng)
            await b.store.close()
    info = machine()
    summary = summarise(results, ingest, builds)
    render(summary, plan, info, vectors_note)
    return {
        "machine": info,
        "plan": plan.__dict__,
        "vectors": vectors_note,
        "now": NOW.isoformat(),
        **summary,
    }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 1,000x100 stores, fewer queries")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--full-embed", action="store_true", help="embed every stored fact for real")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    t = time.perf_counter()
    out = asyncio.run(main(args))
    out["wall_s"] = time.perf_counter() - t
    log(f"done in {out['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
