"""The local embedder's throughput and memory: what an import of long texts costs the server.

    .venv/bin/python bench/embedding.py [--texts N] [--budgets 512 0] [--json]

For each `TOKENS_PER_RUN` given (mnemo/providers/embed.py: the most word pieces, padding
included, one run of the model holds; 0: no bound, every run up to the batch size of 32 texts,
as before the bound), a process of its own loads the local MiniLM and embeds, in this order:

- an import of N texts of mixed length (bench/facts.py's sentences joined one to forty at a time,
  so from a short fact to past the model's 256 word pieces, shuffled): texts/s;
- N short facts (one sentence each, as extraction writes them): texts/s;
- 200 questions one at a time: p50 ms;

and reports its resident memory after loading, its peak (the kernel's high-water mark) and what
it still holds at the end: ONNX Runtime keeps the memory of its largest run for the session's
life, so the peak of one import stays the server's. The processes run one after the other on
the same texts. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.facts import make_facts, make_questions
from bench.recall import machine

QUESTIONS = 200


def texts(n: int, seed: int) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)
    sentences = [f.text for f in make_facts(rng, 4 * n, set(), 1)]
    mixed, at = [], 0
    for _ in range(n):
        k = rng.choice([1, 2, 5, 10, 20, 40])
        mixed.append(" ".join(sentences[at : at + k]))
        at = (at + k) % (len(sentences) - 40)
    return mixed, sentences[-n:], make_questions(rng, QUESTIONS)


def resident_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(budget: int, n: int, seed: int) -> dict:
    """In this process: one configuration's figures."""
    from mnemo.providers import embed

    embed.TOKENS_PER_RUN = budget or 10**9
    mixed, short, questions = texts(n, seed)
    embedder = embed.LocalEmbedder()
    embedder.embed_sync(["warm up the model"])
    loaded = resident_mib()
    started = time.perf_counter()
    embedder.embed_sync(mixed)
    mixed_rate = n / (time.perf_counter() - started)
    started = time.perf_counter()
    embedder.embed_sync(short)
    short_rate = n / (time.perf_counter() - started)
    ms = []
    for q in questions:
        started = time.perf_counter()
        embedder.embed_sync([q])
        ms.append((time.perf_counter() - started) * 1000)
    return {
        "tokens_per_run": budget or None,
        "mixed_texts_per_s": mixed_rate,
        "short_texts_per_s": short_rate,
        "question_p50_ms": float(np.median(ms)),
        "loaded_mib": loaded,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "end_mib": resident_mib(),
    }


def main(args: argparse.Namespace) -> dict:
    rows = []
    for budget in args.budgets:
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                str(budget),
                "--texts",
                str(args.texts),
                "--seed",
                str(args.seed),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
    out = {"machine": machine() | {"load": os.getloadavg()[0]}, "texts": args.texts, "rows": rows}
    print(f"\nThe local embedder, {args.texts} texts each, load {out['machine']['load']:.1f}")
    print(
        "| word pieces a run | import, mixed lengths, texts/s | short facts, texts/s | question p50 ms"
        " | MiB loaded / peak / at the end |"
    )
    print("|---|---|---|---|---|")
    for r in rows:
        memory = f"{r['loaded_mib']:.0f} / {r['peak_mib']:.0f} / {r['end_mib']:.0f}"
        print(
            f"| {r['tokens_per_run'] or 'no bound'} | {r['mixed_texts_per_s']:.0f}"
            f" | {r['short_texts_per_s']:.0f} | {r['question_p50_ms']:.2f} | {memory} |"
        )
    return out


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=640)
    parser.add_argument(
        "--budgets", type=int, nargs="+", default=[512, 0], help="TOKENS_PER_RUN values; 0: none"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one configuration
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.texts, args.seed)))
        return
    out = main(args)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
