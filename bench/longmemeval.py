"""Recall quality on LongMemEval_S: raw chat turns as memories, mnemo next to Khoj's policy.

    .venv/bin/python bench/longmemeval.py [--data PATH] [--quick] [--type T]... [--timed] [--chunk N] [--json]

LongMemEval (Wu et al., ICLR 2025) gives each question its own haystack of
about 48 dated chat sessions (about 490 turns) between a user and an
assistant, a few of which hold the evidence (turns marked `has_answer`, in
the sessions named by `answer_session_ids`). The data is read by path
(default: shared/data/longmemeval-s-dev.json.gz, 149 of the 500 questions of
LongMemEval_S; MIT licence; nothing of it is copied into this repository). No
LLM is involved: this measures retrieval only.

Each question is one person's memory: a fresh SQLite store (the real store,
Memory and Recaller) holding every turn of its haystack, both roles, as a fact
"user: text" or "assistant: text", committed at its session's date (sessions
in date order, through bench/replay.py as in LoCoMo's turns corpus). The
question is then asked with the clock at its `question_date`, or at its last
session's time when that is later (the same day, a few hours on, for 9 of the
139 dev questions: LongMemEval's times of day are not consistent, and a fact
dated after the clock is not recalled). A turn longer
than a memory may be (2,000 characters, or --chunk N) becomes several facts,
cut at spaces; a text said twice (a "thanks!") is one fact, standing for
every turn that says it. --quick: the first question of each type.

Methods, over the same store and the same vectors (the default local embedder, or
the one --embedder names): mnemo (all arms), mnemo without its time arm (which
runs only for a question that names a time: "two weeks ago", "in June";
mnemo/recall/when.py, read against the question_date; counted per type as
"timed"), khoj (Khoj's policy: the 10 most recent facts of the last 7 days,
then the 10 nearest not among them), semantic only and lexical only (mnemo
with that one arm).

Metrics, per question and then averaged, overall and per question_type:
- R@k (turns): the share of the question's `has_answer` turns among the
  first k recalled facts;
- session_R@k: the share of its answer sessions with any turn among the first k;
- MRR: 1 / the rank of the first `has_answer` turn within 20 (0 if none).
- session_MRR: 1 / the rank of the first fact from an answer session within 20, evidence
  turn or not (LongMemEval's sessions hold several turns of one conversation).
Abstention questions (ids ending "_abs": nothing to find) are left out and counted.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.replay import EMBEDDERS, TEXTBOOK, Clock, local_embedder, rankers, replay
from mnemo.domain import MAX_TEXT, Scope, Source, SourceKind
from mnemo.recall.recaller import ARMS
from mnemo.recall.when import window
from mnemo.store.sqlite import SQLiteStore

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval-s-dev.json.gz"
KS = (5, 10, 20)
DEPTH = max(KS)
QUICK_PER_TYPE = 1
METHODS: dict[str, Sequence[str] | str] = {
    "mnemo": ARMS,
    "mnemo_without_time": tuple(a for a in ARMS if a != "time"),
    "khoj": "khoj",
    "semantic_only": ("semantic",),
    "lexical_only": ("lexical",),
    **TEXTBOOK,
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def lme_time(text: str) -> datetime:
    """LongMemEval's dates, e.g. "2023/05/20 (Sat) 02:21", as UTC."""
    return datetime.strptime(text.split(" (")[0] + " " + text.rsplit(" ", 1)[1], "%Y/%m/%d %H:%M").replace(
        tzinfo=UTC
    )


@dataclass
class Turn:
    at: datetime
    role: str
    content: str
    session: str
    has_answer: bool


@dataclass
class Question:
    id: str
    type: str
    text: str
    at: datetime
    turns: list[Turn]  # in date order
    answer_sessions: frozenset[str]


def load(path: Path) -> list[dict]:
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
        return json.load(f)


def question(raw: dict) -> Question:
    sessions = sorted(
        zip(raw["haystack_dates"], raw["haystack_session_ids"], raw["haystack_sessions"], strict=True),
        key=lambda s: lme_time(s[0]),
    )
    turns = [
        Turn(lme_time(date), t["role"], t["content"], sid, bool(t.get("has_answer")))
        for date, sid, session in sessions
        for t in session
    ]
    return Question(
        raw["question_id"],
        raw["question_type"],
        raw["question"],
        lme_time(raw["question_date"]),
        turns,
        frozenset(raw["answer_session_ids"]),
    )


def pieces(text: str, limit: int) -> list[str]:
    """The text, its spacing collapsed as a fact's is, cut at spaces into pieces of at most `limit`."""
    out: list[str] = []
    # a "word" longer than a piece (a long URL, base64) is cut into pieces of its own
    words = (w[i : i + limit] for w in text.split() for i in range(0, len(w), limit))
    for word in words:
        if out and len(out[-1]) + 1 + len(word) <= limit:
            out[-1] += " " + word
        else:
            out.append(word)
    return out or [""]


def facts(q: Question, limit: int) -> list[tuple[datetime, str, Turn]]:
    """Each turn as one or more facts "role: text", each at most `limit` characters with the role."""
    return [
        (turn.at, f"{turn.role}: {piece}", turn)
        for turn in q.turns
        for piece in pieces(turn.content, limit - len(turn.role) - 2)
    ]


def scores(q: Question, recalled: list[list[Turn]]) -> dict[str, float]:
    """recalled: for each recalled fact, best first, the turns it stands for (a turn cut in
    pieces is several facts; a text said twice is one fact)."""
    answers = sum(t.has_answer for t in q.turns) or 1
    out: dict[str, float] = {}
    for k in KS:
        out[f"R@{k}"] = len({id(t) for ts in recalled[:k] for t in ts if t.has_answer}) / answers
    for k in KS:
        hit = {t.session for ts in recalled[:k] for t in ts} & q.answer_sessions
        out[f"session_R@{k}"] = len(hit) / (len(q.answer_sessions) or 1)
    first = next((i for i, ts in enumerate(recalled[:DEPTH], 1) if any(t.has_answer for t in ts)), None)
    out["MRR"] = 1 / first if first else 0.0
    # the first fact of an answer session, evidence or not (how some report LongMemEval's MRR)
    first = next(
        (i for i, ts in enumerate(recalled[:DEPTH], 1) if any(t.session in q.answer_sessions for t in ts)),
        None,
    )
    out["session_MRR"] = 1 / first if first else 0.0
    return out


@dataclass
class Built:
    """A question's haystack in a fresh store, the clock at the question's date."""

    store: SQLiteStore
    scope: Scope
    clock: Clock
    turns_of: dict[str, list[Turn]]  # fact id -> the turns it stands for
    facts: int
    embed_s: float
    store_s: float


async def build(q: Question, embedder, tmp: Path, limit: int) -> Built:
    """Every turn of the question's haystack stored as facts of at most `limit` characters."""
    items = facts(q, limit)
    t = time.perf_counter()
    vectors = embedder.embed_sync([text for _, text, _ in items])
    embed_s = time.perf_counter() - t
    clock = Clock(q.turns[0].at if q.turns else q.at)
    store = SQLiteStore(tmp / f"{q.id}.db", clock=clock)
    await store.open()
    scope = Scope((await store.ensure_user(q.id)).id)
    t = time.perf_counter()
    sources = [Source(SourceKind.IMPORT, conversation_id=t.session, speaker=t.role) for _, _, t in items]
    ids = await replay(store, scope, embedder, clock, [(at, text) for at, text, _ in items], vectors, sources)
    store_s = time.perf_counter() - t
    turns_of: dict[str, list[Turn]] = {}
    for fid, (_, _, turn) in zip(ids, items, strict=True):
        turns_of.setdefault(fid, []).append(turn)
    # asked after every session of its haystack: 9 of the 139 dev questions are dated a few hours
    # before their last session, on the same day (LongMemEval's times of day are not consistent),
    # and recall would not see what was "not yet said"
    clock.at = max([q.at, *(t.at for t in q.turns)])
    return Built(store, scope, clock, turns_of, len(items), embed_s, store_s)


async def ask(
    q: Question, embedder, tmp: Path, limit: int
) -> tuple[dict[str, dict[str, float]], int, float, float]:
    """Per method, the question's scores; the facts stored; the seconds spent embedding and storing them."""
    built = await build(q, embedder, tmp, limit)
    try:
        qvec = embedder.embed_sync([q.text], queries=True)[0]
        out = {}
        for name, rank in rankers(built.store, built.scope, embedder, built.clock, DEPTH, METHODS).items():
            out[name] = scores(q, [built.turns_of[fid] for fid in await rank(q.text, qvec)])
        return out, built.facts, built.embed_s, built.store_s
    finally:
        await built.store.close()
        (tmp / f"{q.id}.db").unlink(missing_ok=True)


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = [*(f"R@{k}" for k in KS), *(f"session_R@{k}" for k in KS), "MRR", "session_MRR"]
    out = {key: sum(r[key] for r in rows) / (len(rows) or 1) for key in keys}
    out["n"] = len(rows)
    return out


def render(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 160
    cols = [*(f"R@{k}" for k in KS), *(f"session_R@{k}" for k in KS), "MRR", "session_MRR"]
    overall = Table(
        title=f"LongMemEval_S turns: {summary['questions']} questions"
        f" ({summary['abstention_excluded']} abstention left out)"
    )
    overall.add_column("method")
    for c in cols:
        overall.add_column(c, justify="right")
    for name in METHODS:
        overall.add_row(name, *(f"{summary[name]['turns']['overall'][c]:.3f}" for c in cols))
    console.print(overall)
    per = Table(title="per question_type (R@10 / session_R@10 / MRR)")
    per.add_column("method")
    types = list(summary["mnemo"]["turns"]["by_type"])
    for ty in types:
        per.add_column(f"{ty} (n={summary['mnemo']['turns']['by_type'][ty]['n']})", justify="right")
    for name in METHODS:
        by_type = summary[name]["turns"]["by_type"]
        per.add_row(
            name,
            *(" / ".join(f"{by_type[ty][c]:.2f}" for c in ("R@10", "session_R@10", "MRR")) for ty in types),
        )
    console.print(per)
    ing = summary["ingest"]
    console.print(
        f"ingest: {ing['turns']} turns ({ing['facts']} facts of at most {ing['chunk_chars']} characters)"
        f" in {ing['seconds']:.0f}s ({ing['turns_per_s']:.0f} turns/s;"
        f" embedding {ing['embed_s']:.0f}s, storing {ing['store_s']:.0f}s)"
        + (
            f"; {ing['vectors_cached']} vectors read from the cache, so not an ingest speed"
            if ing["vectors_cached"]
            else ""
        )
    )


async def main(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    raw = load(args.data)
    abstention = [r for r in raw if r["question_id"].endswith("_abs")]
    raw = [r for r in raw if not r["question_id"].endswith("_abs")]
    if args.type:
        raw = [r for r in raw if r["question_type"] in args.type]
    if args.timed:  # the only questions where mnemo and mnemo_without_time can differ
        raw = [r for r in raw if window(r["question"], lme_time(r["question_date"])) is not None]
    if args.quick:
        seen: Counter[str] = Counter()
        quick = []
        for r in raw:
            seen[r["question_type"]] += 1
            if seen[r["question_type"]] <= QUICK_PER_TYPE:
                quick.append(r)
        raw = quick
    embedder = local_embedder(args.embedder, args.embed_cache)
    rows: dict[str, list[tuple[str, dict[str, float]]]] = {name: [] for name in METHODS}
    timed: Counter[str] = Counter()
    embed_s = store_s = 0.0
    turns = stored = 0
    with tempfile.TemporaryDirectory(prefix="mnemo-longmemeval-") as tmp:
        for i, r in enumerate(raw, 1):
            q = question(r)
            timed[q.type] += window(q.text, q.at) is not None
            result, n, e, s = await ask(q, embedder, Path(tmp), args.chunk)
            embed_s, store_s, turns, stored = embed_s + e, store_s + s, turns + len(q.turns), stored + n
            for name, sc in result.items():
                rows[name].append((q.type, sc))
            log(
                f"{i}/{len(raw)} {q.id} ({q.type}): {len(q.turns)} turns,"
                " R@10 " + ", ".join(f"{name} {sc['R@10']:.2f}" for name, sc in result.items())
            )
    summary: dict = {}
    for name, rs in rows.items():
        types = sorted({ty for ty, _ in rs})
        summary[name] = {
            "turns": {
                "overall": mean([sc for _, sc in rs]),
                "by_type": {ty: mean([sc for t, sc in rs if t == ty]) for ty in types},
            }
        }
    seconds = embed_s + store_s
    summary["ingest"] = {
        "turns": turns,
        "facts": stored,
        "chunk_chars": args.chunk,
        "seconds": seconds,
        "turns_per_s": turns / seconds if seconds else 0.0,
        "embed_s": embed_s,
        "store_s": store_s,
        "embedder": embedder.model_name,
        "vectors_cached": getattr(embedder, "hits", 0),
    }
    summary["timed"] = dict(timed)
    summary["questions"] = len(raw)
    summary["abstention_excluded"] = len(abstention)
    summary["wall_s"] = time.perf_counter() - start
    render(summary)
    log(f"done in {summary['wall_s']:.0f}s")
    return summary


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="a LongMemEval-format JSON file (.gz or not)"
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"the first {QUICK_PER_TYPE} question of each type"
    )
    parser.add_argument(
        "--type", action="append", help="only questions of this question_type (may be repeated)"
    )
    parser.add_argument("--timed", action="store_true", help="only questions that name a time")
    parser.add_argument(
        "--chunk",
        type=int,
        default=MAX_TEXT,
        help=f"the most characters of one fact; longer turns are cut (default {MAX_TEXT}, mnemo's limit)",
    )
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm", help="the local model")
    parser.add_argument("--embed-cache", type=Path, help="keep vectors in this folder (bench/embed_cache.py)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    if not 100 <= args.chunk <= MAX_TEXT:
        parser.error(f"--chunk must be between 100 and {MAX_TEXT}")
    if not args.data.is_file():
        parser.error(f"no LongMemEval file at {args.data} (give one with --data)")
    out = asyncio.run(main(args))
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
