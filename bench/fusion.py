"""Recall's fusion chosen by cross-validation: arm weights, rrf_k and arm depths that hold on unseen data.

    .venv/bin/python bench/fusion.py [--embedder minilm|multilingual-e5] [--refresh] [--json]

Step 1, collection (once; about 25 minutes on two shared cores with MiniLM,
most of it LongMemEval's stores; then cached): the real store and `Recaller.ranked` (the arms' lists that
`recall` fuses, nothing changed) give, for every question, each arm's ranked
facts at depth 40 (semantic, topic and lexical; recency at its recency_k) for
four data sets:
- locomo-observations and locomo-turns: LoCoMo dev, every question of
  categories 1-4, the stores of bench/locomo.py;
- longmemeval: LongMemEval_S dev, a fixed subset: per question type the 2nd to
  4th question in file order (3 per type, 18 in all: a question's store takes
  most of a minute to build; the 1st of each type is left out, so
  `bench/longmemeval.py --quick` is not among what is tuned on),
  the stores of bench/longmemeval.py;
- multilingual-en: the English store and English questions of bench/multilingual.py.
Each part's lists are cached in /tmp/mnemo-fusion under a key of its data
file, the embedder and the settings they are collected with; a rerun with the
same key starts at step 2 (--refresh collects again). As a check, each
question's real `recall` with fixed settings (semantic_k 20, lexical_k 10) is
kept and compared with the offline fusion of the same settings from the lists
collected at 40.

Step 2, offline: every configuration of the grid below is fused with recall's
own `fused` (mnemo.recall.recaller, which is `rrf` of mnemo.recall.fuse with
the settings' weights) from the collected lists, the semantic, topic and
lexical lists cut to the configuration's depth, and the first 20 scored:
    recency weight {0, 0.1, 0.25, 0.5}   lexical weight {0.5, 0.75, 1, 1.25}
    topic_share {0.25, 0.5}   rrf_k {10, 30, 60}   semantic_k, lexical_k {10, 20, 40}
(the semantic weight stays 1: only the ratios and rrf_k matter). A zero weight
keeps the arm as recall keeps it: its facts count for nothing and come last.

Objective: per question the mean of R@10 and MRR (first hit within 20), where
R@10 is each benchmark's own (LoCoMo and multilingual: a hit in the first 10;
LongMemEval: the share of its answer turns in the first 10). A set of
questions scores the mean over its data sets of their mean (each data set
counts once, whatever its size).

Step 3, cross-validation: folds leave one data set out (4), and, within
LoCoMo, one conversation out (both its corpora; 5). Each fold picks the best
configuration on the rest and reports its held-out score next to the final
pick's, the shipped defaults', the earlier defaults' (EARLIER) and
semantic-only's on the same held-out part. The final pick is, among the
configurations some fold picked, the one with the best mean held-out score
over all folds (its own held-out figures are therefore not independent of
the choice; the folds' own choices are); how often each value was picked
says how stable the choice is. Step 2 scores every configuration on every
question once (about 7 minutes, then cached beside the lists); step 3 takes
seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import pickle
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import locomo, longmemeval, multilingual
from bench.multilingual_data import DEFAULT as MULTILINGUAL_DATA
from bench.multilingual_data import load as load_multilingual
from bench.replay import EMBEDDERS, local_embedder
from mnemo.domain import MAX_TEXT, Fact
from mnemo.recall.recaller import ARMS, Recaller, fused
from mnemo.settings import RecallSettings

DEPTH = 20  # what is scored of a fused list
COLLECTED = 40  # the depth the semantic, topic and lexical lists are collected at
LME_SKIP, LME_PER_TYPE = 1, 3
DATASETS = ("locomo-observations", "locomo-turns", "longmemeval", "multilingual-en")
GRID = {
    "recency": (0.0, 0.1, 0.25, 0.5),
    "lexical": (0.5, 0.75, 1.0, 1.25),
    "topic_share": (0.25, 0.5),
    "rrf_k": (10.0, 30.0, 60.0),
    "semantic_k": (10, 20, 40),
    "lexical_k": (10, 20, 40),
}
CACHE = Path(tempfile.gettempdir()) / "mnemo-fusion"
Ranked = dict[str, list[tuple[Fact, float]]]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Asked:
    """One question: where it comes from, what answers it, and each arm's list for it."""

    dataset: str
    group: str  # the LoCoMo conversation; the data set elsewhere
    units: dict[str, frozenset[str]]  # fact id -> the answer units it holds (non-empty only)
    total: int  # the answer units to find (R@10 is the share found)
    ranked: Ranked
    real: list[str]  # a real `recall` with CHECK: fact ids, best first

    def scores(self, ids: Sequence[str]) -> tuple[float, float]:
        """(R@10, MRR within DEPTH) of a list of fact ids, best first."""
        found = set().union(*(self.units.get(fid, frozenset()) for fid in ids[:10]))
        first = next((i for i, fid in enumerate(ids[:DEPTH], 1) if fid in self.units), None)
        return len(found) / (self.total or 1), 1 / first if first else 0.0


# -- step 1: the arms' lists of the real recall ---------------------------------------


# The check: a real recall with these settings, to compare with their offline fusion (it
# tests the cutting of the collected lists to a smaller depth, so its depths are not COLLECTED).
CHECK = RecallSettings(
    weights={"semantic": 1.0, "lexical": 1.0, "recency": 0.5},
    topic_share=0.5,
    rrf_k=60.0,
    semantic_k=20,
    lexical_k=10,
    max_facts=DEPTH,
    max_tokens=10**9,
    ranker="rrf",
)
# The defaults before this benchmark chose them, kept as a reference.
EARLIER = CHECK.model_copy(update={"lexical_k": 20})
COLLECTING = CHECK.model_copy(update={"semantic_k": COLLECTED, "lexical_k": COLLECTED})


async def ask(store, scope, embedder, clock, text: str, vector: np.ndarray) -> tuple[Ranked, list[str]]:
    """The arms' lists at the collected depth, and the ids of a real recall with CHECK."""
    ranked = await Recaller(store, embedder, COLLECTING, clock).ranked(scope, text, vector=vector, arms=ARMS)
    checked = Recaller(store, embedder, CHECK, clock)
    return ranked, [h.fact.id for h in await checked.recall(scope, text, vector=vector, limit=DEPTH)]


async def collect_locomo(path: Path, embedder, tmp: Path) -> list[Asked]:
    out = []
    for conv in locomo.load(path):
        qvecs = embedder.embed_sync([q.text for q in conv.questions], queries=True)
        for corpus in locomo.CORPORA:
            built = await locomo.build(conv, corpus, embedder, tmp)
            try:
                for q, v in zip(conv.questions, qvecs, strict=True):
                    ranked, real = await ask(built.store, built.scope, embedder, built.clock, q.text, v)
                    units = {fid: frozenset({"hit"}) for fid, ev in built.evidence.items() if ev & q.evidence}
                    out.append(Asked(f"locomo-{corpus}", conv.name, units, 1, ranked, real))
            finally:
                await built.store.close()
        log(f"locomo {conv.name}: {len(conv.questions)} questions")
    return out


def lme_subset(raw: list[dict]) -> list[dict]:
    """Per question type, in file order, the questions after the first LME_SKIP, LME_PER_TYPE of them."""
    seen: Counter[str] = Counter()
    out = []
    for r in raw:
        if r["question_id"].endswith("_abs"):
            continue
        seen[r["question_type"]] += 1
        if LME_SKIP < seen[r["question_type"]] <= LME_SKIP + LME_PER_TYPE:
            out.append(r)
    return out


async def collect_longmemeval(path: Path, embedder, tmp: Path) -> list[Asked]:
    out = []
    for r in lme_subset(longmemeval.load(path)):
        q = longmemeval.question(r)
        built = await longmemeval.build(q, embedder, tmp, MAX_TEXT)
        try:
            v = embedder.embed_sync([q.text], queries=True)[0]
            ranked, real = await ask(built.store, built.scope, embedder, built.clock, q.text, v)
        finally:
            await built.store.close()
            (tmp / f"{q.id}.db").unlink(missing_ok=True)
        answers = {id(t): f"t{i}" for i, t in enumerate(t for t in q.turns if t.has_answer)}
        units = {
            fid: frozenset(answers[id(t)] for t in turns if t.has_answer)
            for fid, turns in built.turns_of.items()
            if any(t.has_answer for t in turns)
        }
        out.append(Asked("longmemeval", "longmemeval", units, len(answers), ranked, real))
        log(f"longmemeval {len(out)}: {q.id} ({q.type}), {built.facts} facts")
    return out


async def collect_multilingual(path: Path, embedder, tmp: Path) -> list[Asked]:
    templates = load_multilingual(path)
    asked = [t for t in templates if t.questions]
    store, scope, clock, fact_of = await multilingual.language_store(templates, "en", embedder, tmp)
    out = []
    try:
        texts = [t.questions["en"] for t in asked]  # type: ignore[index]
        for t, text, v in zip(asked, texts, embedder.embed_sync(texts, queries=True), strict=True):
            ranked, real = await ask(store, scope, embedder, clock, text, v)
            units = {fact_of[t.id]: frozenset({"hit"})}
            out.append(Asked("multilingual-en", "multilingual-en", units, 1, ranked, real))
    finally:
        await store.close()
    log(f"multilingual-en: {len(out)} questions")
    return out


def cache_key(data: Path, args: argparse.Namespace) -> str:
    """What a part's lists depend on: its data file, the embedder, the settings they are collected with."""
    described = [f"{data.resolve()}:{data.stat().st_size}:{data.stat().st_mtime_ns}", args.embedder]
    described += [COLLECTING.model_dump_json(), CHECK.model_dump_json(), f"{LME_SKIP}/{LME_PER_TYPE}"]
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:16]


async def collect(args: argparse.Namespace) -> list[tuple[Path, list[Asked]]]:
    """Every part's questions with their lists, and the part's cache file (read when there is one)."""
    parts = [
        ("multilingual", MULTILINGUAL_DATA, collect_multilingual),
        ("locomo", args.locomo, collect_locomo),
        ("longmemeval", args.longmemeval, collect_longmemeval),
    ]
    CACHE.mkdir(exist_ok=True)
    out = []
    embedder = None
    for name, data, collect_part in parts:
        path = CACHE / f"{name}-{cache_key(data, args)}.pickle"
        if path.is_file() and not args.refresh:
            log(f"{name}: the arms' lists from {path}")
            out.append((path, pickle.loads(path.read_bytes())))
            continue
        embedder = embedder or local_embedder(args.embedder)
        with tempfile.TemporaryDirectory(prefix="mnemo-fusion-") as tmp:
            part = await collect_part(data, embedder, Path(tmp))
        path.write_bytes(pickle.dumps(part))
        log(f"{name}: the arms' lists kept in {path}")
        out.append((path, part))
    return out


# -- step 2: every configuration, offline ---------------------------------------------


def settings_of(config: dict[str, float]) -> RecallSettings:
    return RecallSettings(
        weights={"semantic": 1.0, "lexical": config["lexical"], "recency": config["recency"]},
        topic_share=config["topic_share"],
        rrf_k=config["rrf_k"],
        semantic_k=int(config["semantic_k"]),
        lexical_k=int(config["lexical_k"]),
    )


def config_of(s: RecallSettings) -> dict[str, float]:
    return {
        "recency": s.weights.get("recency", 1.0),
        "lexical": s.weights.get("lexical", 1.0),
        "topic_share": s.topic_share,
        "rrf_k": s.rrf_k,
        "semantic_k": s.semantic_k,
        "lexical_k": s.lexical_k,
    }


def configs() -> list[dict[str, float]]:
    return [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]


def cut(ranked: Ranked, s: RecallSettings) -> Ranked:
    """The lists as recall with `s` would have them: each search arm at its depth."""
    depth = {"semantic": s.semantic_k, "topic": s.semantic_k, "lexical": s.lexical_k}
    return {arm: hits[: depth.get(arm, len(hits))] for arm, hits in ranked.items()}


def fused_ids(q: Asked, s: RecallSettings) -> list[str]:
    return [h.fact.id for h in fused(cut(q.ranked, s), s)[:DEPTH]]


def scored(lists: Path, questions: list[Asked], grid: list[dict[str, float]]) -> np.ndarray:
    """[c, i]: configuration c's objective on question i, kept beside the part's lists."""
    key = hashlib.sha256(json.dumps(grid).encode()).hexdigest()[:12]
    path = lists.with_name(f"{lists.stem}-scores-{key}.npy")
    if path.is_file() and path.stat().st_mtime >= lists.stat().st_mtime:
        return np.load(path)
    table = np.array([objective(questions, settings_of(c)) for c in grid])
    np.save(path, table)
    return table


def objective(questions: list[Asked], s: RecallSettings) -> np.ndarray:
    """Per question, the mean of R@10 and MRR under `s`."""
    return np.array([sum(q.scores(fused_ids(q, s))) / 2 for q in questions])


def semantic_only(questions: list[Asked]) -> np.ndarray:
    rows = [q.scores([f.id for f, _ in q.ranked.get("semantic", [])[:DEPTH]]) for q in questions]
    return np.array([sum(r) / 2 for r in rows])


def macro(values: np.ndarray, datasets: np.ndarray, mask: np.ndarray) -> float:
    """The mean over the data sets present under `mask` of their mean value."""
    means = [values[mask & (datasets == d)].mean() for d in DATASETS if (mask & (datasets == d)).any()]
    return float(np.mean(means))


# -- step 3: cross-validation ---------------------------------------------------------


def folds(questions: list[Asked]) -> list[tuple[str, np.ndarray]]:
    """(name, held-out mask): one data set out, then one LoCoMo conversation out."""
    datasets = np.array([q.dataset for q in questions])
    groups = np.array([q.group for q in questions])
    out = [(f"without {d}", datasets == d) for d in DATASETS]
    conversations = sorted({q.group for q in questions if q.dataset.startswith("locomo")})
    return out + [(f"without LoCoMo {c}", groups == c) for c in conversations]


def cross_validate(questions: list[Asked], grid: list[dict[str, float]], table: np.ndarray) -> dict:
    """table[c, i]: configuration c's objective on question i."""
    datasets = np.array([q.dataset for q in questions])
    defaults = objective(questions, RecallSettings())
    earlier = objective(questions, EARLIER)
    semantic = semantic_only(questions)
    rows = []
    for name, held in folds(questions):
        train = [macro(row, datasets, ~held) for row in table]
        best = int(np.argmax(train))
        rows.append(
            {
                "fold": name,
                "held_out_questions": int(held.sum()),
                "chosen": grid[best],
                "chosen_train": train[best],
                "chosen_held_out": macro(table[best], datasets, held),
                "defaults_held_out": macro(defaults, datasets, held),
                "earlier_held_out": macro(earlier, datasets, held),
                "semantic_only_held_out": macro(semantic, datasets, held),
                "_best": best,
            }
        )
    masks = [held for _, held in folds(questions)]
    held_mean = np.array([np.mean([macro(row, datasets, m) for m in masks]) for row in table])
    candidates = sorted({r["_best"] for r in rows})
    final = max(candidates, key=lambda c: (held_mean[c], -c))
    stability = {
        p: dict(Counter(str(r["chosen"][p]) for r in rows).most_common()) for p in GRID
    }  # per parameter: value -> folds that chose it
    for r, m in zip(rows, masks, strict=True):
        del r["_best"]
        r["final_held_out"] = macro(table[final], datasets, m)
    top = np.argsort(-held_mean, kind="stable")[:10]
    return {
        "folds": rows,
        "cv_estimate": {
            "chosen": float(np.mean([r["chosen_held_out"] for r in rows])),
            "defaults": float(np.mean([r["defaults_held_out"] for r in rows])),
            "earlier": float(np.mean([r["earlier_held_out"] for r in rows])),
            "semantic_only": float(np.mean([r["semantic_only_held_out"] for r in rows])),
        },
        "candidates": [{"config": grid[c], "mean_held_out": float(held_mean[c])} for c in candidates],
        "final": {"config": grid[final], "mean_held_out": float(held_mean[final])},
        "same_as_final": sum(r["chosen"] == grid[final] for r in rows),
        "stability": stability,
        "top10_mean_held_out": [{"config": grid[c], "mean_held_out": float(held_mean[c])} for c in top],
    }


def per_dataset(questions: list[Asked], settings: dict[str, RecallSettings | None]) -> dict:
    """R@10 and MRR per data set for each named configuration (None: semantic only)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, s in settings.items():
        for d in DATASETS:
            qs = [q for q in questions if q.dataset == d]
            rows = [
                q.scores(fused_ids(q, s) if s else [f.id for f, _ in q.ranked.get("semantic", [])])
                for q in qs
            ]
            out.setdefault(name, {})[d] = {
                "R@10": float(np.mean([r[0] for r in rows])),
                "MRR": float(np.mean([r[1] for r in rows])),
                "n": len(rows),
            }
    return out


def render(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 200
    short = {"recency": "rec", "lexical": "lex", "topic_share": "topic", "rrf_k": "k", "semantic_k": "sk"}

    def shown(config: dict[str, float]) -> str:
        return " ".join(f"{short.get(p, 'lk')}={v:g}" for p, v in config.items())

    cv = summary["cv"]
    table = Table(title="held-out score (mean of R@10 and MRR) per fold")
    for col in ("fold", "n", "chosen on the rest", "chosen", "final", "defaults", "earlier", "semantic only"):
        table.add_column(col, justify="left" if col.startswith(("fold", "chosen on")) else "right")
    for r in cv["folds"]:
        table.add_row(
            r["fold"],
            str(r["held_out_questions"]),
            shown(r["chosen"]),
            f"{r['chosen_held_out']:.3f}",
            f"{r['final_held_out']:.3f}",
            f"{r['defaults_held_out']:.3f}",
            f"{r['earlier_held_out']:.3f}",
            f"{r['semantic_only_held_out']:.3f}",
        )
    est = cv["cv_estimate"]
    table.add_row(
        "mean",
        "",
        "",
        f"{est['chosen']:.3f}",
        f"{cv['final']['mean_held_out']:.3f}",
        f"{est['defaults']:.3f}",
        f"{est['earlier']:.3f}",
        f"{est['semantic_only']:.3f}",
    )
    console.print(table)
    console.print(
        f"final: {shown(cv['final']['config'])} (mean held-out {cv['final']['mean_held_out']:.3f});"
        f" chosen as is by {cv['same_as_final']} of {len(cv['folds'])} folds"
    )
    console.print(
        "values chosen per parameter (value: folds): "
        + "; ".join(
            f"{p} " + ", ".join(f"{v}: {n}" for v, n in c.items()) for p, c in cv["stability"].items()
        )
    )
    per = Table(title="per data set, all its questions: R@10 / MRR")
    per.add_column("configuration")
    for d in DATASETS:
        per.add_column(d, justify="right")
    for name, by in summary["per_dataset"].items():
        per.add_row(name, *(f"{by[d]['R@10']:.3f} / {by[d]['MRR']:.3f}" for d in DATASETS))
    console.print(per)
    check = summary["check"]
    console.print(
        f"check: offline fusion = real recall (semantic_k 20, lexical_k 10) for {check['same']}"
        f" of {check['n']} questions (first {DEPTH} ids)"
    )


async def main(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    parts = await collect(args)
    questions = [q for _, part in parts for q in part]
    collected_s = time.perf_counter() - start
    shipped = RecallSettings()
    same = sum(fused_ids(q, CHECK) == q.real for q in questions)
    grid = configs()
    t = time.perf_counter()
    table = np.hstack([scored(path, part, grid) for path, part in parts])
    log(f"{len(grid)} configurations over {len(questions)} questions in {time.perf_counter() - t:.0f}s")
    cv = cross_validate(questions, grid, table)
    summary = {
        "cv": cv,
        "per_dataset": per_dataset(
            questions,
            {
                "final": settings_of(cv["final"]["config"]),
                "shipped": shipped,
                "earlier": EARLIER,
                "semantic only": None,
            },
        ),
        "shipped": config_of(shipped),
        "check": {"same": same, "n": len(questions)},
        "questions": dict(Counter(q.dataset for q in questions)),
        "embedder": args.embedder,
        "collect_s": collected_s,
        "wall_s": time.perf_counter() - start,
    }
    render(summary)
    log(f"done in {summary['wall_s']:.0f}s")
    return summary


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_DATA, help="a LoCoMo-format JSON file")
    parser.add_argument(
        "--longmemeval", type=Path, default=longmemeval.DEFAULT_DATA, help="a LongMemEval-format file"
    )
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm", help="the local model")
    parser.add_argument("--refresh", action="store_true", help="collect the arms' lists again")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    for path in (args.locomo, args.longmemeval):
        if not path.is_file():
            parser.error(f"no data file at {path}")
    out = asyncio.run(main(args))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    from bench.fusion import cli as run  # the cached questions are bench.fusion's, whoever runs it

    run()
