"""What a second embedder (MNEMO_EMBED_SECOND=multilingual-e5) costs: its vectors of a store's
facts, and a recall with it beside one without, in the same run on the same store.

    .venv/bin/python bench/second_embedder.py [--facts N] [--queries N] [--json]

One person with N facts (10,000; bench/recall.py's synthetic facts and questions, and its
MiniLM vectors: a pool sentence's real embedding plus noise), then:

- embedding: MiniLM and the second embedder alone over the facts' real texts in the batches
  a filling uses (facts/s each, and what embedding a fact with both makes of MiniLM's rate);
  then the filling itself, as a recall starts it (recall/second.py, `Second.fill`: the same
  batches, each written to the store as it comes), facts/s;
- recall including the question's embedding: `Memory.recall` with the second embedder and
  without, the same questions one after the other in turn, after a warm-up; p50 and p99 of
  each and their ratio. With it, the question is embedded by both models at once (in two
  threads) and the candidates' second vectors are read from the store.

Quality is bench/ranker.py's (`--second-embedder multilingual-e5`). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import make_questions
from bench.recall import Vectors, build, clock, log, machine
from mnemo.domain import Scope
from mnemo.memory import Memory
from mnemo.providers.embed import LocalEmbedder
from mnemo.providers.multilingual import MultilingualEmbedder
from mnemo.recall.second import BATCH_SIZE, Second

WARMUP = 10


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99))}


async def main(args: argparse.Namespace) -> dict:
    rng = random.Random(args.seed)
    minilm = LocalEmbedder()
    minilm.embed_sync(["warm up the model"])
    e5 = MultilingualEmbedder()
    e5.embed_sync(["warm up the model"])
    with tempfile.TemporaryDirectory(prefix="mnemo-second-") as tmp:
        vectors = Vectors(minilm, False, rng)
        built = await build("second", 1, args.facts, Path(tmp) / "second.db", vectors, minilm, rng)
        store, scope = built.store, Scope(built.users[0])
        texts = [f.text for f in await store.unembedded(scope.user_id, "no-model", 0, args.facts)]
        embedding_s = {}
        for name, model in (("minilm", minilm), ("second", e5)):  # each model alone, the same batches
            started = time.perf_counter()
            for i in range(0, len(texts), BATCH_SIZE):
                model.embed_sync(texts[i : i + BATCH_SIZE])
            embedding_s[name] = time.perf_counter() - started
        started = time.perf_counter()
        filled = await Second(store, e5).fill(scope.user_id)
        fill_s = time.perf_counter() - started
        log(f"filled in {filled} vectors in {fill_s:.1f} s (embedding alone: {embedding_s})")

        one = Memory(store, minilm, clock=clock)
        both = Memory(store, minilm, clock=clock, second=e5)
        if both.recaller.second is None:
            raise SystemExit(f"no model reads {e5.model_name}'s columns: see bench/ranker.py --write")
        questions = make_questions(rng, WARMUP + args.queries)
        times: dict[str, list[float]] = {"one embedder": [], "with the second": []}
        for i, question in enumerate(questions):
            order = [("one embedder", one), ("with the second", both)]
            for name, memory in order if i % 2 else order[::-1]:
                started = time.perf_counter()
                await memory.recall(question, scope)
                if i >= WARMUP:
                    times[name].append((time.perf_counter() - started) * 1000)
        await one.write_recall_log()
        await both.write_recall_log()
        await store.close()
    recall = {name: percentiles(ms) for name, ms in times.items()}
    out = {
        "machine": machine() | {"load": os.getloadavg()[0]},
        "facts": args.facts,
        "queries": args.queries,
        "fill": {
            "minilm_facts_per_s": len(texts) / embedding_s["minilm"],
            "second_facts_per_s": len(texts) / embedding_s["second"],
            "filled_facts_per_s": filled / fill_s,  # the second's embedding and the store's writes
            # embedding a fact with both models against MiniLM alone (the rate of the two, one after
            # the other, over MiniLM's)
            "ingest_with_both": embedding_s["minilm"] / (embedding_s["minilm"] + embedding_s["second"]),
        },
        "recall": recall,
        "ratio_p50": recall["with the second"]["p50"] / recall["one embedder"]["p50"],
        "ratio_p99": recall["with the second"]["p99"] / recall["one embedder"]["p99"],
    }
    fill = out["fill"]
    print(
        f"\nSecond embedder ({e5.model_name}) beside MiniLM, {args.facts:,} facts, {args.queries} questions,"
        f" load {out['machine']['load']:.1f}\n"
        f"embedding facts, batches of {BATCH_SIZE}: MiniLM {fill['minilm_facts_per_s']:.0f}/s,"
        f" second {fill['second_facts_per_s']:.0f}/s (filled in with the store's writes:"
        f" {fill['filled_facts_per_s']:.0f}/s); a fact embedded by both: {fill['ingest_with_both']:.2f}x"
        " MiniLM's rate\n"
        + "\n".join(
            f"recall incl. embedding, {name}: p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms"
            for name, r in recall.items()
        )
        + f"\nwith / without: p50 {out['ratio_p50']:.2f}x, p99 {out['ratio_p99']:.2f}x"
    )
    return out


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    out = asyncio.run(main(args))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
