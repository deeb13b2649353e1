"""Recall in every language: one person's memory in seven languages, asked in each and across.

    .venv/bin/python bench/multilingual.py [--quick] [--embedder NAME ...] [--json]

The data is bench/data/multilingual.jsonl (bench/multilingual_data.py): one
synthetic person's 120 facts, each written in English, German, Spanish,
French, Portuguese, Japanese and Russian, and 60 questions about them in the
same seven languages. The facts are close on purpose (a sister, a brother and
a cousin; the city of birth, of childhood, of now), and a question shares
almost no words with its fact.

Each language is one person's store: its 120 facts committed through the real
store (bench/replay.py), all on one day, then asked a week later. Three sets
of questions per language L:
- native: L's 60 questions of L's store;
- asked in English: the English questions of L's store (the fact in L);
- of English facts: L's questions of the English store.
English's native row is the reference: the target is every language within 5
points of it, native and across.

Methods, per local model (`--embedder`, default both): mnemo (all arms, as
recall runs), semantic only (mnemo with that one arm) and Khoj's policy (the
10 most recent facts of the last 7 days, then the 10 nearest: every fact here
was said exactly 7 days before, so all are "recent"). A question has one
right fact; R@k is the share of questions whose fact is among the first k,
MRR 1 / its rank within 20 (0 if not). --quick: English, German and Japanese.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.multilingual_data import LANGUAGES, Template, load
from bench.replay import EMBEDDERS, TEXTBOOK, Clock, local_embedder, rankers, replay
from mnemo.domain import Scope
from mnemo.recall.recaller import ARMS
from mnemo.store.sqlite import SQLiteStore

KS = (1, 5, 10)
DEPTH = 20
QUICK_LANGUAGES = ("en", "de", "ja")
METHODS: dict[str, Sequence[str] | str] = {
    "mnemo": ARMS,
    "semantic only": ("semantic",),
    "khoj": "khoj",  # Khoj's policy (bench/khoj_baseline.py): recent first, then the nearest
    **TEXTBOOK,
}
SAID = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ASKED = SAID + timedelta(days=7)
SETS = ("native", "asked in English", "of English facts")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def scores(ranks: list[int | None]) -> dict[str, float]:
    """R@k and MRR over questions, from the 1-based rank of each one's fact (None: not found)."""
    n = len(ranks) or 1
    out = {f"R@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in KS}
    out["MRR"] = sum(1 / r for r in ranks if r is not None) / n
    out["n"] = len(ranks)
    return out


async def language_store(
    templates: list[Template], language: str, embedder, tmp: Path
) -> tuple[SQLiteStore, Scope, Clock, dict[str, str]]:
    """The person's store in `language`; template id -> fact id."""
    clock = Clock(SAID)
    store = SQLiteStore(tmp / f"{embedder.model_name}-{language}.db", clock=clock)
    await store.open()
    scope = Scope((await store.ensure_user(f"person-{language}")).id)
    texts = [t.facts[language] for t in templates]
    ids = await replay(
        store, scope, embedder, clock, [(SAID, text) for text in texts], embedder.embed_sync(texts)
    )
    clock.at = ASKED
    return store, scope, clock, {t.id: fid for t, fid in zip(templates, ids, strict=True)}


async def run(templates: list[Template], languages: tuple[str, ...], embedder, tmp: Path) -> dict:
    """Per method, per language, per question set: the scores."""
    asked = [t for t in templates if t.questions]
    stores = {lang: await language_store(templates, lang, embedder, tmp) for lang in {"en", *languages}}
    qvecs = {
        lang: embedder.embed_sync([t.questions[lang] for t in asked], queries=True)  # type: ignore[index]
        for lang in languages
    }
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {name: {} for name in METHODS}
    try:
        for lang in languages:
            sets = {
                "native": (lang, lang),
                "asked in English": (lang, "en"),
                "of English facts": ("en", lang),
            }
            for set_name, (store_lang, question_lang) in sets.items():
                if lang == "en" and set_name != "native":
                    continue
                if question_lang not in qvecs:
                    qvecs[question_lang] = embedder.embed_sync(
                        [t.questions[question_lang] for t in asked],  # type: ignore[index]
                        queries=True,
                    )
                store, scope, clock, fact_of = stores[store_lang]
                for name, rank in rankers(store, scope, embedder, clock, DEPTH, METHODS).items():
                    ranks = []
                    for t, v in zip(asked, qvecs[question_lang], strict=True):
                        found = await rank(t.questions[question_lang], v)  # type: ignore[index]
                        ranks.append(found.index(fact_of[t.id]) + 1 if fact_of[t.id] in found else None)
                    out[name].setdefault(lang, {})[set_name] = scores(ranks)
    finally:
        for store, *_ in stores.values():
            await store.close()
    return out


def render(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 160
    for model, by_method in summary["models"].items():
        for name, by_lang in by_method.items():
            reference = by_lang["en"]["native"]
            english = f"{reference['R@5']:.3f} / {reference['MRR']:.3f}"
            table = Table(title=f"{model}, {name}: R@5 / MRR (English native: {english})")
            table.add_column("language")
            for set_name in SETS:
                table.add_column(set_name, justify="right")
            table.add_column("worst R@5 vs English", justify="right")
            for lang, sets in by_lang.items():
                cells = [f"{sets[s]['R@5']:.3f} / {sets[s]['MRR']:.3f}" if s in sets else "-" for s in SETS]
                gap = min(m["R@5"] for m in sets.values()) - reference["R@5"]
                table.add_row(lang, *cells, f"{gap:+.3f}")
            console.print(table)
    console.print(", ".join(f"{m}: {s:.0f}s" for m, s in summary["seconds"].items()))


async def main(args: argparse.Namespace) -> dict:
    templates = load(args.data)
    languages = QUICK_LANGUAGES if args.quick else LANGUAGES
    summary: dict = {"models": {}, "seconds": {}, "languages": list(languages)}
    with tempfile.TemporaryDirectory(prefix="mnemo-multilingual-") as tmp:
        for name in args.embedder:
            t = time.perf_counter()
            embedder = local_embedder(name)
            summary["models"][embedder.model_name] = await run(templates, languages, embedder, Path(tmp))
            summary["seconds"][embedder.model_name] = time.perf_counter() - t
            log(f"{embedder.model_name}: {summary['seconds'][embedder.model_name]:.0f}s")
    summary["facts_per_store"] = len(templates)
    summary["questions_per_set"] = sum(1 for t in templates if t.questions)
    render(summary)
    return summary


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=None, help="a file in the format of bench/data/multilingual.jsonl"
    )
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_LANGUAGES)}")
    parser.add_argument(
        "--embedder",
        choices=EMBEDDERS,
        nargs="+",
        default=list(EMBEDDERS),
        help="the local models (default: both)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    if args.data is None:
        from bench.multilingual_data import DEFAULT

        args.data = DEFAULT
    out = asyncio.run(main(args))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
