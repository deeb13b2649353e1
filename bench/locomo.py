"""Recall quality on LoCoMo: mnemo next to the Khoj recall policy, and mnemo with each arm off.

    .venv/bin/python bench/locomo.py [--data PATH] [--quick] [--json]

LoCoMo (Maharana et al., 2024, "Evaluating Very Long-Term Conversational Memory
of LLM Agents") has long conversations between two people over many dated
sessions, per-session "observations" (short facts about one speaker, each with
the dialogue ids it came from) and questions with the dialogue ids of their
evidence. The data is read by path (default: shared/data/locomo-dev.json, five
of the ten conversations; licence CC BY-NC 4.0, so nothing of it is copied into
this repository). No LLM is involved: this measures retrieval only.

Two corpora, each in a fresh SQLite store per conversation (the real store,
Memory and Recaller; nothing is cached between runs):

- observations: every observation becomes a fact; its evidence is its own
  dialogue ids.
- turns: every dialogue turn becomes a fact "Speaker: text" (a shared photo's
  caption, which LoCoMo gives instead of the image, is appended as
  "[shares <caption>]"); its evidence is the turn's own id.

Whose user: one user per conversation holding both speakers' facts. A LoCoMo
question may be about either speaker (or both), and the observations already
name their speaker ("Caroline attended …"), as raw turns do once prefixed with
the speaker, so the name is in the fact text where both the lexical and the
semantic arm can use it. mnemo and the baseline read the same user, the same
facts and the same vectors.

Time: each session is replayed with the injectable clock at the session's date
(facts are committed with that time as their record time, last-seen time and
valid-from), so "recent" means recent in the conversation's own time. Every
question of categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4
single-hop; 5, adversarial, has no answer and is skipped) is asked one day
after the last session.

Methods, all over the same store and the same query vectors (the default
local embedder, all-MiniLM-L6-v2 int8, or the one --embedder names):
- mnemo: `Recaller.recall(limit=20)` with all its arms (recency, semantic,
  topic: the semantic search again with the question's names taken out,
  lexical; pinned finds nothing here). Benchmark configuration: max_facts 20
  and no token budget (the default 1,000-token budget would cut long raw
  turns before 20), everything else as shipped in RecallSettings.
- mnemo -<arm>: the same with one arm switched off (the ablation). The time
  arm runs only for a question that names a time ("in June", "last year":
  mnemo/recall/when.py, read against the asking time); the run counts them
  per category ("timed").
- mnemo semantic only: the dense arm alone, for orientation.
- khoj: Khoj's policy (bench/khoj_baseline.py): the 10 most recent facts of
  the last 7 days, then the 10 nearest by cosine not already among them,
  in the order Khoj puts them in the prompt (recent first). Its R@20 is
  its whole set; its R@5, R@10 and MRR reflect that order (the nearest-first
  order is the "semantic only" row, up to 20).

Metrics: a hit is a recalled fact whose evidence ids overlap the question's
(malformed evidence ids such as "D8:6; D9:17" or "D30:05" are normalised).
R@k is the share of questions with a hit among the first k recalled facts;
MRR uses the rank of the first hit within 20 (0 if none). The ceiling is the
share of questions with any matching fact in the corpus: some questions'
evidence turns produced no observation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
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

from bench.replay import EMBEDDERS, TEXTBOOK, Clock, Ranker, local_embedder, rankers, replay
from mnemo.domain import Scope, Source, SourceKind
from mnemo.recall.recaller import ARMS
from mnemo.recall.when import window
from mnemo.store.sqlite import SQLiteStore

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
DEPTH = max(KS)
QUICK_CONVERSATIONS = 2
CORPORA = ("observations", "turns")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- the data ---------------------------------------------------------------------


def evidence_ids(raw) -> frozenset[str]:
    """Dialogue ids as "D<session>:<turn>", whatever the spelling in the data."""
    items = raw if isinstance(raw, list) else [raw]
    return frozenset(f"D{int(s)}:{int(t)}" for item in items for s, t in _EVIDENCE.findall(str(item)))


@dataclass
class Item:
    text: str
    evidence: frozenset[str]


@dataclass
class Session:
    at: datetime
    observations: list[Item] = field(default_factory=list)
    turns: list[Item] = field(default_factory=list)


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    name: str
    sessions: list[Session]
    questions: list[Question]

    def items(self, corpus: str) -> list[tuple[datetime, Item]]:
        return [(s.at, item) for s in self.sessions for item in getattr(s, corpus)]


def session_time(text: str) -> datetime:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def load(path: Path) -> list[Conversation]:
    out = []
    for raw in json.loads(path.read_text()):
        conv = raw["conversation"]
        numbers = sorted(
            int(m.group(1))
            for key in conv
            if (m := re.fullmatch(r"session_(\d+)", key)) and f"session_{m.group(1)}_date_time" in conv
        )
        sessions = []
        for n in numbers:
            session = Session(session_time(conv[f"session_{n}_date_time"]))
            session.turns = [Item(turn_text(t), evidence_ids(t["dia_id"])) for t in conv[f"session_{n}"]]
            by_speaker = raw.get("observation", {}).get(f"session_{n}_observation", {})
            session.observations = [
                Item(text, evidence_ids(ev)) for facts in by_speaker.values() for text, ev in facts
            ]
            sessions.append(session)
        questions = [
            Question(q["question"], int(q["category"]), evidence_ids(q.get("evidence", [])))
            for q in raw["qa"]
            if int(q["category"]) in CATEGORIES
        ]
        out.append(Conversation(raw.get("sample_id", f"conv-{len(out)}"), sessions, questions))
    return out


# -- one store per conversation and corpus ------------------------------------------


def methods(store: SQLiteStore, scope: Scope, embedder, clock: Clock) -> dict[str, Ranker]:
    """Each method: (question text, its vector) -> recalled fact ids, best first."""
    arms: dict[str, Sequence[str] | str] = {"mnemo": ARMS, "khoj": "khoj", **TEXTBOOK}
    for arm in ("recency", "semantic", "topic", "parts", "lexical", "time"):
        arms[f"mnemo -{arm}"] = tuple(a for a in ARMS if a != arm)
    arms["mnemo semantic only"] = ("semantic",)
    return rankers(store, scope, embedder, clock, DEPTH, arms)


@dataclass
class Built:
    store: SQLiteStore
    scope: Scope
    clock: Clock
    evidence: dict[str, frozenset[str]]  # fact id -> its dialogue ids


async def build(conv: Conversation, corpus: str, embedder, tmp: Path) -> Built:
    """A fresh store with the conversation's facts, one commit per session at the session's time."""
    items = conv.items(corpus)
    clock = Clock(items[0][0] if items else datetime(2000, 1, 1, tzinfo=UTC))
    store = SQLiteStore(tmp / f"{conv.name}-{corpus}.db", clock=clock)
    await store.open()
    scope = Scope((await store.ensure_user(conv.name)).id)
    vectors = embedder.embed_sync([item.text for _, item in items])
    # each fact's conversation is its session, as for a fact learnt from that conversation
    sources = [Source(SourceKind.IMPORT, conversation_id=at.isoformat()) for at, _ in items]
    ids = await replay(
        store, scope, embedder, clock, [(at, item.text) for at, item in items], vectors, sources
    )
    evidence = {fid: item.evidence for fid, (_, item) in zip(ids, items, strict=True)}
    clock.at = conv.sessions[-1].at + timedelta(days=1)  # questions are asked after the last session
    return Built(store, scope, clock, evidence)


async def evaluate(
    built: Built, rank: Ranker, questions: list[Question], qvecs: np.ndarray
) -> list[tuple[int, int | None]]:
    """Per question: (category, 1-based rank of the first hit within DEPTH, or None)."""
    rows = []
    for q, v in zip(questions, qvecs, strict=True):
        ids = await rank(q.text, v)
        first = next((i for i, fid in enumerate(ids[:DEPTH], 1) if built.evidence[fid] & q.evidence), None)
        rows.append((q.category, first))
    return rows


def ceiling(built: Built, questions: list[Question]) -> list[tuple[int, int | None]]:
    reachable = set().union(*built.evidence.values()) if built.evidence else set()
    return [(q.category, 1 if q.evidence & reachable else None) for q in questions]


async def run_corpus(
    conv: Conversation, corpus: str, embedder, qvecs: np.ndarray, tmp: Path
) -> dict[str, list[tuple[int, int | None]]]:
    """For each method, and the ceiling: per question (category, rank of the first hit)."""
    built = await build(conv, corpus, embedder, tmp)
    try:
        results = {
            name: await evaluate(built, rank, conv.questions, qvecs)
            for name, rank in methods(built.store, built.scope, embedder, built.clock).items()
        }
        results["ceiling"] = ceiling(built, conv.questions)
        return results
    finally:
        await built.store.close()


# -- metrics and output -------------------------------------------------------------


def metrics(rows: list[tuple[int, int | None]]) -> dict[str, float]:
    n = len(rows) or 1
    out = {f"R@{k}": sum(1 for _, r in rows if r is not None and r <= k) / n for k in KS}
    out["MRR"] = sum(1 / r for _, r in rows if r is not None) / n
    out["n"] = len(rows)
    return out


def summarise(rows: dict[str, dict[str, list]]) -> dict:
    """{method: {corpus: {"overall": metrics, "per_category": {"1": metrics, …}}}}."""
    out: dict[str, dict] = {}
    for corpus, by_method in rows.items():
        for name, rs in by_method.items():
            out.setdefault(name, {})[corpus] = {
                "overall": metrics(rs),
                "per_category": {
                    str(c): metrics([r for r in rs if r[0] == c])
                    for c in CATEGORIES
                    if any(r[0] == c for r in rs)
                },
            }
    return out


def render(summary: dict, counts: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = 160
    cols = [*(f"R@{k}" for k in KS), "MRR"]
    for corpus in CORPORA:
        ceiling = summary["ceiling"][corpus]
        n = ceiling["overall"]["n"]
        table = Table(title=f"LoCoMo {corpus}: {counts[corpus]} facts, {n} questions")
        table.add_column("method")
        for c in cols:
            table.add_column(c, justify="right")
        for name, result in summary.items():
            if name != "ceiling":
                table.add_row(name, *(f"{result[corpus]['overall'][c]:.3f}" for c in cols))
        console.print(table)
        console.print(
            f"ceiling (questions with any matching {corpus[:-1]}): {ceiling['overall']['R@20']:.3f}"
        )
        per = Table(title=f"LoCoMo {corpus}, per category (R@5 / R@10 / R@20 / MRR)")
        per.add_column("method")
        for c, label in CATEGORIES.items():
            n = ceiling["per_category"].get(str(c), {}).get("n", 0)
            per.add_column(f"{c} {label} (n={n})", justify="right")
        for name in ("mnemo", "mnemo -time", "khoj", "ceiling"):
            cells = []
            for c in CATEGORIES:
                m = summary[name][corpus]["per_category"].get(str(c))
                cells.append(" / ".join(f"{m[k]:.2f}" for k in cols) if m else "-")
            per.add_row(name, *cells)
        console.print(per)


def timed(convs: list[Conversation]) -> dict[str, int]:
    """Per category, how many questions name a time the recall reads (its time arm runs)."""
    counts = dict.fromkeys(map(str, CATEGORIES), 0)
    for conv in convs:
        asked = conv.sessions[-1].at + timedelta(days=1)
        for q in conv.questions:
            counts[str(q.category)] += window(q.text, asked) is not None
    return counts


async def main(args: argparse.Namespace) -> dict:
    convs = load(args.data)
    if args.quick:
        convs = convs[:QUICK_CONVERSATIONS]
    embedder = local_embedder(args.embedder, args.embed_cache)
    rows: dict[str, dict[str, list]] = {c: {} for c in CORPORA}
    counts = dict.fromkeys(CORPORA, 0)
    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-") as tmp:
        for conv in convs:
            t = time.perf_counter()
            qvecs = embedder.embed_sync([q.text for q in conv.questions], queries=True)
            for corpus in CORPORA:
                counts[corpus] += len(conv.items(corpus))
                for name, rs in (await run_corpus(conv, corpus, embedder, qvecs, Path(tmp))).items():
                    rows[corpus].setdefault(name, []).extend(rs)
            log(f"{conv.name}: {len(conv.questions)} questions in {time.perf_counter() - t:.0f}s")
    summary = summarise(rows)
    render(summary, counts)
    summary["run"] = {
        "timed": timed(convs),
        "data": str(args.data),
        "conversations": [c.name for c in convs],
        "facts": counts,
        "embedder": embedder.model_name,
    }
    return summary


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file")
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_CONVERSATIONS} conversations")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm", help="the local model")
    parser.add_argument("--embed-cache", type=Path, help="keep vectors in this folder (bench/embed_cache.py)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"no LoCoMo file at {args.data} (give one with --data)")
    t = time.perf_counter()
    out = asyncio.run(main(args))
    out["run"]["wall_s"] = time.perf_counter() - t
    log(f"done in {out['run']['wall_s']:.0f}s")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
