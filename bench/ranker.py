"""The learned ranker: collected, trained and measured out of fold; the shipped model written.

    .venv/bin/python bench/ranker.py [--embed-cache DIR] [--refresh] [--ablation] [--write]
                                     [--second-embedder multilingual-e5 [--write-second]] [--json]

Step 1, collection (cached in /tmp/mnemo-ranker under a key of the data, the
embedder and the features; --refresh collects again): for every dev question
of LongMemEval_S (every non-abstention question), LoCoMo (both corpora, every
question of categories 1-4), the English multilingual set (MiniLM) and the
multilingual set in each of its seven languages with e5, the real store
and `Recaller.candidates` give the candidates (every arm to `candidate_k`, no
floor) and their features (mnemo/recall/features.py), and each candidate's
relevance: 2 for a fact holding evidence (a LongMemEval `has_answer` turn, a
LoCoMo evidence dialogue, the multilingual question's own fact), 1 for a
LongMemEval fact from an answer session, 0 otherwise. The textbook baselines
(bench/textbook.py: plain cosine, plain RRF of BM25 and cosine) and mnemo's
fusion (`ranker="rrf"`, the fallback) are scored on the same stores.

Step 2, out-of-fold: the questions are cut into FOLDS folds grouped so that
nothing is scored by a model that saw it: a LoCoMo conversation (both its
corpora) stays in one fold, a LongMemEval question (its own haystack) in one,
a multilingual template (its fact and question in every language, with either
embedder) in one. Each fold is scored by a model trained on the other folds;
the tables print these out-of-fold figures beside the baselines in each
benchmark's own metrics. The objective that chooses the spread over
conversations is the mean over benchmarks of R@10 and MRR (LongMemEval's of
its turns and of its sessions; the multilingual languages averaged first).

--second-embedder NAME measures, out of fold, what a second embedder's
cosines (the question against each candidate) add as features: the gain a
second semantic arm could bring, before anyone pays for a second vector per
fact.

Step 3 (--write): one model trained on every question is written to
src/mnemo/recall/ranker.json, with its card (RANKER.md beside it gets the
same figures). The ablation trains without each feature group, out of fold.
With --second-embedder, --write also writes the model that reads the second
embedder's columns (src/mnemo/recall/ranker-<its model>.json, which recall
reads under MNEMO_EMBED_SECOND) and its section of the card; --write-second
writes that model and section alone, the first model and the rest of its
card left as they were.

Model: LightGBM's lambdarank (gradient-boosted trees), seeded and
deterministic. LightGBM is a tool of this script and the tests only
(requirements-test.lock); mnemo reads the trees with numpy
(mnemo/recall/ranker.py). A logistic regression on the same features
measured below it (out of fold on LoCoMo and the multilingual set, the
objective 0.716 against 0.743), so the trees ship.

The trees' size, 150 of depth 4 with each tree seeing 80% of the features,
was chosen out of fold: ten (rounds, depth, features seen, least candidates
in a leaf) settings from (100, 4, 0.9, 50) to (300, 6, 0.9, 50), measured
with the weighting below, ranged 0.755-0.770 in the objective, and without
it (100, 4, 0.9) and (150, 4, 0.8) gave 0.768 and 0.769 (two runs differ by
up to 0.003 with the seed or the thread count alone). 150 of depth 4 is the
smallest near the best; scoring 90 candidates takes 0.25 ms, against 0.18
ms for the 100 trees before and 0.67 ms for 200 of depth 5.

Each LongMemEval question weighs FAMILY_WEIGHTS["longmemeval"] = 5 in training (every other
question 1): its 139 questions (raw turns as memories, the longest texts) were 6% of the
candidates beside LoCoMo's 1,524. Chosen out of fold among 1, 2, 3, 4, 5, 8 and 11 (the
objective 0.7722, 0.7721, 0.7724, 0.7720, 0.7759, 0.7749, 0.7739, on the candidates collected
before the last change to recall); over three more seeds each, 1: 0.7694-0.7712, LongMemEval
turns R@10 0.860-0.868, MRR 0.753-0.769; 3: 0.7725-0.7741, 0.900-0.911, 0.780-0.788; 5:
0.7724-0.7763, 0.908-0.913, 0.794-0.806; LoCoMo observations R@20 0.768-0.774 against
0.773-0.778. So the weight is chosen on the same out-of-fold figures it is reported with, like
the trees' size and the spread. Weighted so, the models ranked last month's purchase below one
said months before (tests/core/test_recall_time.py): the trees may not lower a candidate for
being in the time a question names (a monotone constraint on `in_time`, RISING), which keeps
that test and measured 0.7742 against 0.7759 without it, in one run.
Measured and not kept: weighing each question by 1 / sqrt(the number of questions of its
family) (LongMemEval's turns R@10 0.87 -> 0.89, and LoCoMo and the multilingual set cost as
much; its models ranked a fact said in the month a question names below one said months
before when recalling as of a past time, tests/core/test_recall_time.py), and by 1 / the
number of questions of its benchmark, so that each counts as in the objective (0.7702: the
60 English multilingual questions, weighing 13, are overfit).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import pickle
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import locomo, longmemeval, multilingual
from bench.multilingual_data import DEFAULT as MULTILINGUAL_DATA
from bench.multilingual_data import LANGUAGES
from bench.multilingual_data import load as load_multilingual
from bench.replay import EMBEDDERS, local_embedder
from bench.textbook import Textbook
from mnemo.domain import MAX_TEXT
from mnemo.recall import features as features_module
from mnemo.recall.features import FEATURES, SECOND
from mnemo.recall.ranker import MODEL, Ranker, second_model, spread_out
from mnemo.recall.recaller import ARMS, Recaller, above_floor
from mnemo.settings import RecallSettings, with_floors

DEPTH = 20
FOLDS = 5
SEED = 20261206
CACHE = Path(tempfile.gettempdir()) / "mnemo-ranker"
CARD = MODEL.with_name("RANKER.md")
# The feature groups of the ablation (each trained without, out of fold).
GROUPS: dict[str, tuple[str, ...]] = {
    "semantic": ("semantic", "semantic_found", "semantic_rr", "semantic_gap"),
    "topic": ("topic", "topic_rr"),
    "parts": ("parts", "parts_rr"),
    "lexical": ("lexical", "lexical_rr", "coverage", "lexical_best", "lexical_hits"),
    "names": ("named",),
    "time": ("timed", "in_time", "age", "newness"),
    "context": ("context_semantic", "context_lexical", "context_count"),
    "fact": ("assistant", "length", "mentions", "pinned"),
}
LGB_PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "learning_rate": 0.05,
    "num_leaves": 15,
    "max_depth": 4,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambdarank_truncation_level": 30,
    "verbose": -1,
    "num_threads": 2,
    "deterministic": True,
    "force_col_wise": True,
    "seed": SEED,
}
# a fact the time arm returned (said, or become true, in the time a question names) never scores
# lower for it: without this, the LongMemEval weight below made models that ranked last month's
# purchase under one said months before (tests/core/test_recall_time.py)
RISING = ("in_time",)
ROUNDS = 150
# a question's weight in training, by its data family (the others 1): see the docstring
FAMILY_WEIGHTS = {"longmemeval": 5.0}
SPREADS = (0.0, 0.25, 0.5, 1.0, 2.0)  # recall's session_spread, chosen out of fold among these


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Asked:
    """One question: its candidates' features and relevance, and what each benchmark scores."""

    dataset: str  # longmemeval, locomo-observations, locomo-turns, multilingual-en
    group: str  # what must stay in one fold: a LoCoMo conversation, a question, a template
    kind: str  # the question's type or category
    rows: np.ndarray  # one row of FEATURES per candidate
    gain: np.ndarray  # per candidate: 2 evidence, 1 same answer session, 0
    units: list[frozenset[str]]  # per candidate: the answer units it holds ("t3", "s:<session>")
    total: dict[str, int]  # how many answer units of each kind ("t", "s") there are to find
    kept: np.ndarray  # per candidate: whether recall gives it when ranked (above the floor)
    conversations: list[str | None]  # per candidate: the conversation it was learnt from
    baselines: dict[str, list[frozenset[str]]] = field(default_factory=dict)  # method -> units, best first
    query: str = ""
    texts: list[str] = field(default_factory=list)  # per candidate: its text (for --second-embedder)


def metrics(asked: Asked, ranked_units: Sequence[frozenset[str]]) -> dict[str, float]:
    """The benchmark's metrics of a list (each entry the answer units of one recalled fact)."""
    out: dict[str, float] = {}
    top = list(ranked_units[:DEPTH])
    if asked.dataset == "longmemeval":
        for k in (5, 10, 20):
            found = set().union(*top[:k]) if top[:k] else set()
            out[f"R@{k}"] = sum(u.startswith("t") for u in found) / (asked.total["t"] or 1)
            out[f"session_R@{k}"] = sum(u.startswith("s:") for u in found) / (asked.total["s"] or 1)
        first = next((i for i, u in enumerate(top, 1) if any(x.startswith("t") for x in u)), None)
        out["MRR"] = 1 / first if first else 0.0
        first = next((i for i, u in enumerate(top, 1) if any(x.startswith("s:") for x in u)), None)
        out["session_MRR"] = 1 / first if first else 0.0
    else:
        first = next((i for i, u in enumerate(top, 1) if u), None)
        for k in (1, 5, 10, 20):
            out[f"R@{k}"] = float(first is not None and first <= k)
        out["MRR"] = 1 / first if first else 0.0
    return out


# -- step 1: collection -------------------------------------------------------------------

WIDE = RecallSettings(max_facts=DEPTH, max_tokens=10**9)


async def candidates_of(store, scope, embedder, clock, text, vector, label) -> tuple:
    """(features, per-candidate units, baselines' units) for one question. `label(fid)`: the
    answer units a fact holds."""
    settings = with_floors(WIDE, "recall", embedder.model_name)
    recaller = Recaller(store, embedder, settings, clock)
    hits, rows = await recaller.candidates(scope, text, vector=vector, arms=ARMS)
    units = [label(h.fact.id) for h in hits]
    kept = np.array([above_floor(h, settings.semantic_floor) for h in hits], bool)
    conversations = [h.fact.source.conversation_id for h in hits]
    fusion = Recaller(store, embedder, settings.model_copy(update={"ranker": "rrf"}), clock)
    textbook = Textbook(store._conn, scope.user_id, embedder.model_name)
    lists = {
        "mnemo fusion (RRF fallback)": [
            h.fact.id for h in await fusion.recall(scope, text, vector=vector, limit=DEPTH)
        ],
        "plain cosine": textbook.cosine(vector)[:DEPTH],
        "plain RRF": textbook.rrf(text, vector)[:DEPTH],
    }
    return (
        rows,
        units,
        (kept, conversations),
        {name: [label(fid) for fid in ids] for name, ids in lists.items()},
        (text, [h.fact.text for h in hits]),
    )


def gains(units: list[frozenset[str]]) -> np.ndarray:
    return np.array(
        [2 if any(not x.startswith("s:") for x in u) else 1 if u else 0 for u in units], np.float32
    )


def lme_units(turns_of: dict, answer_turns: dict, sessions: frozenset[str], fid: str) -> frozenset[str]:
    """A LongMemEval fact's answer units: the answer turns it stands for, and its answer session."""
    turns = turns_of[fid]
    held = {answer_turns[id(t)] for t in turns if t.has_answer}
    return frozenset(held | {f"s:{t.session}" for t in turns if t.session in sessions})


def evidence_units(evidence: dict[str, frozenset[str]], wanted: frozenset[str], fid: str) -> frozenset[str]:
    return frozenset({"hit"}) if evidence[fid] & wanted else frozenset()


def own_fact(answer: str, fid: str) -> frozenset[str]:
    return frozenset({"hit"}) if fid == answer else frozenset()


async def collect_longmemeval(path: Path, embedder, tmp: Path) -> list[Asked]:
    out = []
    raw = [r for r in longmemeval.load(path) if not r["question_id"].endswith("_abs")]
    group = sharing_answers(raw)
    for r in raw:
        q = longmemeval.question(r)
        built = await longmemeval.build(q, embedder, tmp, MAX_TEXT)
        answer_turns = {id(t): f"t{i}" for i, t in enumerate(t for t in q.turns if t.has_answer)}
        label = partial(lme_units, built.turns_of, answer_turns, q.answer_sessions)
        try:
            v = embedder.embed_sync([q.text], queries=True)[0]
            rows, units, (kept, conversations), base, said = await candidates_of(
                built.store, built.scope, embedder, built.clock, q.text, v, label
            )
        finally:
            await built.store.close()
            (tmp / f"{q.id}.db").unlink(missing_ok=True)
        total = {"t": len(answer_turns), "s": len(q.answer_sessions)}
        out.append(
            Asked(
                "longmemeval",
                group[q.id],
                q.type,
                rows,
                gains(units),
                units,
                total,
                kept,
                conversations,
                base,
                *said,
            )
        )
        log(f"longmemeval {len(out)}/{len(raw)}: {q.id} ({q.type}), {len(units)} candidates")
    return out


async def collect_locomo(path: Path, embedder, tmp: Path) -> list[Asked]:
    out = []
    for conv in locomo.load(path):
        qvecs = embedder.embed_sync([q.text for q in conv.questions], queries=True)
        for corpus in locomo.CORPORA:
            built = await locomo.build(conv, corpus, embedder, tmp)
            try:
                for q, v in zip(conv.questions, qvecs, strict=True):
                    label = partial(evidence_units, built.evidence, q.evidence)
                    rows, units, (kept, conversations), base, said = await candidates_of(
                        built.store, built.scope, embedder, built.clock, q.text, v, label
                    )
                    kind = locomo.CATEGORIES[q.category]
                    out.append(
                        Asked(
                            f"locomo-{corpus}",
                            conv.name,
                            kind,
                            rows,
                            gains(units),
                            units,
                            {},
                            kept,
                            conversations,
                            base,
                            *said,
                        )
                    )
            finally:
                await built.store.close()
        log(f"locomo {conv.name}: {len(conv.questions)} questions")
    return out


async def collect_multilingual(
    path: Path, embedder, tmp: Path, languages: Sequence[str] = ("en",), suffix: str = ""
) -> list[Asked]:
    """Each language's native questions of its own store; a template (its fact and question in
    every language) is one group, so its translations share a fold."""
    templates = load_multilingual(path)
    asked = [t for t in templates if t.questions]
    out = []
    for lang in languages:
        store, scope, clock, fact_of = await multilingual.language_store(templates, lang, embedder, tmp)
        try:
            texts = [t.questions[lang] for t in asked]  # type: ignore[index]
            for t, text, v in zip(asked, texts, embedder.embed_sync(texts, queries=True), strict=True):
                label = partial(own_fact, fact_of[t.id])
                rows, units, (kept, conversations), base, said = await candidates_of(
                    store, scope, embedder, clock, text, v, label
                )
                dataset = f"multilingual-{lang}{suffix}"
                out.append(
                    Asked(
                        dataset, t.id, lang, rows, gains(units), units, {}, kept, conversations, base, *said
                    )
                )
        finally:
            await store.close()
        log(f"multilingual-{lang}{suffix}: {len(asked)} questions")
    return out


# the multilingual set with the multilingual embedder, every language: so that the model reads
# e5's cosines and other languages' questions too (one model serves either embedder)
collect_multilingual_e5 = partial(collect_multilingual, languages=LANGUAGES, suffix="-e5")


def cache_key(data: Path, embedder: str) -> str:
    described = [
        f"{data.resolve()}:{data.stat().st_size}",
        embedder,
        ",".join(FEATURES),
        WIDE.model_dump_json(),
    ]
    # what makes the candidates and their rows: a change to any of these collects again
    bench = Path(__file__).parent
    src = Path(features_module.__file__).parent.parent
    modules = [*(bench / f"{m}.py" for m in ("replay", "textbook", "longmemeval", "locomo", "multilingual"))]
    modules += [*sorted((src / "recall").glob("*.py")), src / "store" / "fulltext.py", src / "settings.py"]
    described += [m.read_text() for m in modules]
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:16]


async def collect(args: argparse.Namespace) -> list[Asked]:
    parts: list[tuple[str, Path, Callable, str]] = [
        ("multilingual", MULTILINGUAL_DATA, collect_multilingual, args.embedder),
        ("multilingual", MULTILINGUAL_DATA, collect_multilingual_e5, "multilingual-e5"),
        ("locomo", args.locomo, collect_locomo, args.embedder),
        ("longmemeval", args.longmemeval, collect_longmemeval, args.embedder),
    ]
    CACHE.mkdir(exist_ok=True)
    out: list[Asked] = []
    embedders: dict[str, object] = {}
    for name, data, collect_part, model in parts:
        if not data.is_file():
            log(f"{name}: no data at {data}, left out")
            continue
        path = CACHE / f"{name}-{model}-{cache_key(data, model)}.pickle"
        if path.is_file() and not args.refresh:
            log(f"{name}: candidates from {path}")
            out += pickle.loads(path.read_bytes())
            continue
        if model not in embedders:
            embedders[model] = local_embedder(model, args.embed_cache)
        embedder = embedders[model]
        with tempfile.TemporaryDirectory(prefix="mnemo-ranker-") as tmp:
            part = await collect_part(data, embedder, Path(tmp))
        path.write_bytes(pickle.dumps(part))
        out += part
    return out


# -- step 2: training and out-of-fold scores -----------------------------------------------


def folds(asked: Sequence[Asked]) -> list[int]:
    """Each question's fold: the groups of each data family (a LoCoMo conversation with both its
    corpora, a LongMemEval question with those sharing an answer session, a multilingual
    template), in sorted order, dealt out to the folds in turn, so each fold holds a fifth of
    every family and a group stays whole."""
    families: dict[str, list[str]] = {}
    for a in asked:
        families.setdefault(a.dataset.split("-")[0], []).append(a.group)
    fold = {
        (family, group): i % FOLDS
        for family, groups in families.items()
        for i, group in enumerate(sorted(set(groups)))
    }
    return [fold[(a.dataset.split("-")[0], a.group)] for a in asked]


def sharing_answers(raw: Sequence[dict]) -> dict[str, str]:
    """Question id -> its group: questions that share an answer session are one group (named
    by its first id), so that no fold is scored on evidence another fold trained on."""
    parent = {r["question_id"]: r["question_id"] for r in raw}

    def root(q: str) -> str:
        while parent[q] != q:
            q = parent[q]
        return q

    first: dict[str, str] = {}
    for r in raw:
        for session in r["answer_session_ids"]:
            other = first.setdefault(session, r["question_id"])
            a, b = sorted((root(other), root(r["question_id"])))
            parent[b] = a
    return {q: root(q) for q in parent}


def booster(rows: Sequence[np.ndarray], asked: Sequence[Asked], columns: Sequence[int]):
    """LightGBM's model over the given columns of the rows (the others trained as zeros)."""
    x = np.concatenate(rows)
    x = np.where(np.isin(np.arange(x.shape[1]), columns), x, 0.0)
    y = np.concatenate([a.gain for a in asked])
    weight = np.concatenate(
        [np.full(len(a.gain), FAMILY_WEIGHTS.get(a.dataset.split("-")[0], 1.0)) for a in asked]
    )
    import lightgbm

    data = lightgbm.Dataset(x, y, weight=weight, group=[len(a.gain) for a in asked], free_raw_data=False)
    rising = [int(i < len(FEATURES) and FEATURES[i] in RISING) for i in range(x.shape[1])]
    return lightgbm.train(LGB_PARAMS | {"monotone_constraints": rising}, data, num_boost_round=ROUNDS)


def train(
    asked: Sequence[Asked],
    columns: Sequence[int],
    rows: Sequence[np.ndarray] | None = None,
    names: tuple[str, ...] = FEATURES,
) -> Ranker:
    """A model over the given feature columns (the others are trained as zeros: the model's
    file always names every feature); `rows` and `names`: each question's rows and their
    columns' names, when they are other than its FEATURES (a second embedder's beside)."""
    trees = booster(rows_of(asked) if rows is None else rows, asked, columns)
    return Ranker.from_json(trees_json(trees.dump_model(), names), names)


def trees_json(dump: dict, names: tuple[str, ...] = FEATURES) -> dict:
    """LightGBM's dumped model (of the columns `names`) as the complete heap-ordered trees
    mnemo/recall/ranker.py reads."""
    trees = [t["tree_structure"] for t in dump["tree_info"]]
    depth = max(1, max(_depth(t) for t in trees))
    inner, leaves = 2**depth - 1, 2**depth
    feature = np.zeros((len(trees), inner), int)
    threshold = np.full((len(trees), inner), np.finfo(np.float64).max)  # JSON has no infinity
    leaf = np.zeros((len(trees), leaves))
    for ti, root in enumerate(trees):
        stack = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i >= inner:  # a leaf at the full depth
                leaf[ti, i - inner] = node["leaf_value"]
            elif "leaf_value" in node:  # a shallower leaf: padded, every way down to it
                stack += [(node, 2 * i + 1), (node, 2 * i + 2)]
            else:
                if node.get("decision_type", "<=") != "<=" or node.get("missing_type") not in (None, "None"):
                    raise ValueError("only <= splits with no missing values are read")
                feature[ti, i], threshold[ti, i] = node["split_feature"], node["threshold"]
                stack += [(node["left_child"], 2 * i + 1), (node["right_child"], 2 * i + 2)]
    return {
        "kind": "trees",
        "features": list(names),
        "feature": feature.tolist(),
        "threshold": threshold.tolist(),
        "leaf": leaf.tolist(),
    }


def _depth(node: dict) -> int:
    if "leaf_value" in node:
        return 0
    return 1 + max(_depth(node["left_child"]), _depth(node["right_child"]))


def ordered_units(asked: Asked, scores: np.ndarray, spread: float) -> list[frozenset[str]]:
    """The candidates recall would give, best first: by the model's scores, the first places
    spread over conversations as recall spreads them (mnemo.recall.ranker.spread_out), and
    those recall drops below the floor left out."""
    order = spread_out(scores, asked.conversations, spread, 2 * DEPTH)
    return [asked.units[i] for i in order if asked.kept[i]]


def out_of_fold(
    asked: Sequence[Asked], columns: Sequence[int], extra: Sequence[np.ndarray] | None = None
) -> dict[int, np.ndarray]:
    """Each question's candidates' scores by the model of the folds it is not in. `extra`: per
    question, more columns beside its FEATURES (an experiment, scored by LightGBM itself)."""
    out: dict[int, np.ndarray] = {}
    fold_of = folds(asked)
    rows = (
        [a.rows for a in asked]
        if extra is None
        else list(map(np.hstack, zip(rows_of(asked), extra, strict=True)))
    )
    for fold in range(FOLDS):
        inside = [i for i, f in enumerate(fold_of) if f != fold]
        if extra is None:
            model = train([asked[i] for i in inside], columns)
        else:
            trees = booster([rows[i] for i in inside], [asked[i] for i in inside], columns)
        for i, a in enumerate(asked):
            if fold_of[i] == fold:
                out[i] = model.scores(a.rows) if extra is None else trees.predict(rows[i])
    return out


def rows_of(asked: Sequence[Asked]) -> list[np.ndarray]:
    return [a.rows for a in asked]


def second_columns(asked: Sequence[Asked], embedder) -> list[np.ndarray]:
    """Per question, its candidates' SECOND columns (mnemo/recall/features.py): a second
    embedder's cosine with the question (standardised over the candidates, as `semantic` is),
    1 / its rank among them, and its gap to the best; as recall computes them."""
    out = []
    for a in asked:
        if not a.texts:
            raise SystemExit("these candidates were collected without their texts: run with --refresh")
        q = embedder.embed_sync([a.query], queries=True)[0]
        cosines = (embedder.embed_sync(a.texts) @ q).astype(np.float64)
        out.append(features_module.second_columns(cosines, a.rows))
    return out


def ordered(
    asked: Sequence[Asked], scores: dict[int, np.ndarray], spread: float
) -> dict[int, list[frozenset[str]]]:
    return {i: ordered_units(asked[i], s, spread) for i, s in scores.items()}


def table(asked: Sequence[Asked], oof: dict[int, list[frozenset[str]]]) -> dict:
    """Per data set, per method: the mean metrics (and per kind, for mnemo and plain RRF)."""
    out: dict = {}
    for dataset in sorted({a.dataset for a in asked}):
        idx = [i for i, a in enumerate(asked) if a.dataset == dataset]
        methods = {"mnemo (learned, out of fold)": {i: oof[i] for i in idx}}
        for name in asked[idx[0]].baselines:
            methods[name] = {i: asked[i].baselines[name] for i in idx}
        rows = {}
        for name, lists in methods.items():
            per = [metrics(asked[i], lists[i]) for i in idx]
            rows[name] = {k: float(np.mean([p[k] for p in per])) for k in per[0]}
            by_kind: dict[str, list] = {}
            for i, p in zip(idx, per, strict=True):
                by_kind.setdefault(asked[i].kind, []).append(p)
            rows[name]["by_kind"] = {
                kind: {k: float(np.mean([p[k] for p in ps])) for k in ps[0]} | {"n": len(ps)}
                for kind, ps in sorted(by_kind.items())
            }
        out[dataset] = {"n": len(idx), "methods": rows}
    return out


def render(result: dict, ablation: dict, what: str = "without each group") -> str:
    lines = []
    for dataset, part in result.items():
        methods = part["methods"]
        cols = [k for k in next(iter(methods.values())) if k != "by_kind"]
        lines.append(f"\n{dataset} ({part['n']} questions)")
        lines.append("| method | " + " | ".join(cols) + " |")
        lines.append("|---" * (len(cols) + 1) + "|")
        for name, m in methods.items():
            lines.append(f"| {name} | " + " | ".join(f"{m[c]:.3f}" for c in cols) + " |")
    if ablation:
        lines.append(
            "\nablation, out of fold: the objective (the mean over benchmarks of R@10 and MRR, LongMemEval's"
            f" of turns and sessions) {what}"
        )
        for name, score in ablation.items():
            lines.append(f"  {name:>24}: {score:.4f}")
    return "\n".join(lines)


SECOND_HEADING = "\n## With a second embedder"


def second_card(file_name: str, figures: str) -> str:
    """RANKER.md's section on the model that reads a second embedder's columns too."""
    return f"""{SECOND_HEADING} (MNEMO_EMBED_SECOND)

`{file_name}` beside this file is the same kind of trees, trained on the same questions and
folds with three more features, the second embedder's (`{"`, `".join(SECOND)}`: its cosine of
the question with each candidate, standardised over the candidates, 1 / its rank among them,
its gap to the best). Recall reads it when MNEMO_EMBED_SECOND is set. Made by
`.venv/bin/python bench/ranker.py --embed-cache /tmp/mnemo-vectors --second-embedder
multilingual-e5 --write-second` on {date.today().isoformat()}, which prints these figures again;
out of fold, with the objective of the first model's in the same run beside:
{figures}
"""


def card(about: dict, figures: str) -> str:
    """RANKER.md: what the shipped model is, what it was trained on, how it measured."""
    features = "\n".join(f"- `{name}`" for name in FEATURES)
    questions = ", ".join(f"{name} {n}" for name, n in sorted(about["questions"].items()))
    return f"""# The recall ranker: model card

`ranker.json` beside this file orders recall's candidates (mnemo/recall/ranker.py).
Made by `.venv/bin/python bench/ranker.py --embed-cache /tmp/mnemo-vectors --ablation --write`
on {about["trained"]}; that command prints every figure below again.

- **What it is**: {about["trees"]} regression trees of depth {about["params"]["max_depth"]} (LightGBM
  lambdarank, seeded and deterministic; parameters in `ranker.json`'s card), read with
  numpy. The size was chosen out of fold among ten settings (bench/ranker.py's docstring
  lists them).
- **Candidates**: every arm to `candidate_k` = {about["candidate_k"]} (chosen out of fold
  among 100, 60 and 40 at the same objective; 40 halves the cost), no similarity floor.
- **Spread over conversations**: `session_spread` = {about["session_spread"]} (recall's setting),
  chosen out of fold among {", ".join(map(str, SPREADS))} (the objective of each, today, is
  in the ablation).
- **Trained on** the development data only, {about["candidates"]:,} candidates of these
  questions: {questions}. LongMemEval_S: its 139 non-abstention dev questions (raw turns as
  memories); LoCoMo: its five dev conversations, both corpora, categories 1-4; the
  multilingual set, its English questions with {about["embedder"]} and every language's with
  multilingual-e5. Each candidate's relevance: 2 evidence, 1 (LongMemEval) a fact of an
  answer session, 0 otherwise. A LongMemEval question weighs
  {about["params"]["family_weights"]["longmemeval"]:g} in training, every other 1 (chosen out of fold;
  bench/ranker.py's docstring).
- **Embedders**: {about["embedder"]}, and multilingual-e5 on the multilingual set. Cosines
  are standardised over each question's candidates, so one model reads either embedder's.
- **Folds**: {about["folds"]}. Every figure below is out of fold: each question
  was ordered by a model that did not see it, its conversation or its template. The
  shipped model is trained on all of them: on these questions its own figures would be
  in-sample, and are not reported.

## Features

{features}

## Out-of-fold figures, beside the baselines on the same stores
{figures}
"""


def objective(result: dict) -> float:
    """The mean over benchmarks of the learned rows' R@10 and MRR (LongMemEval: of its turns
    and of its sessions, the issue's targets): LongMemEval, each LoCoMo corpus, the English
    multilingual set, and the multilingual set with e5 (its languages averaged first)."""
    by_bench: dict[str, list[float]] = {}
    for dataset, part in result.items():
        m = part["methods"]["mnemo (learned, out of fold)"]
        bench = "multilingual-e5" if dataset.endswith("-e5") else dataset
        wanted = ("R@10", "MRR", "session_R@10", "session_MRR") if "session_MRR" in m else ("R@10", "MRR")
        by_bench.setdefault(bench, []).append(float(np.mean([m[k] for k in wanted])))
    return float(np.mean([np.mean(v) for v in by_bench.values()]))


def main(args: argparse.Namespace) -> dict:
    asked = asyncio.run(collect(args))
    log(f"{len(asked)} questions, {sum(len(a.gain) for a in asked)} candidates")
    everything = list(range(len(FEATURES)))
    scores = out_of_fold(asked, everything)
    # the spread over conversations: the figures are recall's own setting's; the objective of
    # each of SPREADS is printed beside (0.25 was chosen among them, out of fold, when it was set;
    # between 0 and 0.25 the objective has since moved by less than a seed or a thread count moves it)
    by_spread = {spread: table(asked, ordered(asked, scores, spread)) for spread in SPREADS}
    spread = RecallSettings().session_spread
    result = by_spread[spread]
    ablation: dict[str, float] = {f"spread {x}": objective(r) for x, r in by_spread.items()}
    if args.ablation:
        for group, names in GROUPS.items():
            kept = [i for i, f in enumerate(FEATURES) if f not in names]
            ablation[f"without {group}"] = objective(
                table(asked, ordered(asked, out_of_fold(asked, kept), spread))
            )
    second_text = ""
    if args.second_embedder:
        embedder = local_embedder(args.second_embedder, args.embed_cache)
        extra = second_columns(asked, embedder)
        wide = list(range(len(FEATURES) + len(SECOND)))
        second = table(asked, ordered(asked, out_of_fold(asked, wide, extra), spread))
        ablation[f"with {args.second_embedder} beside"] = objective(second)
        beside = {
            "one embedder, this run": objective(result),
            f"with {args.second_embedder}": objective(second),
        }
        second_text = render(second, beside, "with one embedder and with both").replace(
            "mnemo (learned, out of fold)", f"mnemo + {args.second_embedder}"
        )
        print(second_text)
    text = render(result, ablation)
    print(text)
    about = {
        "trained": date.today().isoformat(),
        "embedder": args.embedder,
        "questions": dict(Counter(a.dataset for a in asked)),
        "candidates": int(sum(len(a.gain) for a in asked)),
        "folds": f"{FOLDS}, each a fifth of every family's groups (LoCoMo conversations, LongMemEval"
        " questions with those sharing an answer session, multilingual templates), dealt in turn",
        "params": LGB_PARAMS | {"rounds": ROUNDS, "family_weights": FAMILY_WEIGHTS, "rising": list(RISING)},
        "session_spread": spread,
        "candidate_k": WIDE.candidate_k,
        "out_of_fold": result,
    }
    section = ""
    if args.second_embedder and (args.write or args.write_second):
        rows = list(map(np.hstack, zip(rows_of(asked), extra, strict=True)))
        paired = train(asked, wide, rows, FEATURES + SECOND)
        second_file = second_model(embedder.model_name)
        paired_about = about | {"second_embedder": embedder.model_name, "out_of_fold": second}
        paired_about["trees"] = len(paired.arrays["leaf"])
        second_data = {"kind": "trees", "features": list(FEATURES + SECOND), "card": paired_about}
        second_data |= {k: v.tolist() for k, v in paired.arrays.items()}
        second_file.write_text(json.dumps(second_data, separators=(",", ":")))
        section = second_card(second_file.name, second_text)
        log(f"wrote {second_file}")
    if args.write:
        model = train(asked, everything)
        data = {"kind": "trees", "features": list(FEATURES)} | {
            k: v.tolist() for k, v in model.arrays.items()
        }
        data["card"] = about | {"trees": len(data["leaf"])}
        MODEL.write_text(json.dumps(data, separators=(",", ":")))
        if not section and SECOND_HEADING in (kept := CARD.read_text()):
            section = SECOND_HEADING + kept.split(SECOND_HEADING, 1)[1]  # the second model is as it was
        CARD.write_text(card(data["card"], text) + section)
        log(f"wrote {MODEL} and {CARD}")
    elif section:  # the first model and its card as they were: its section replaced
        CARD.write_text(CARD.read_text().split(SECOND_HEADING)[0].rstrip("\n") + "\n" + section)
        log(f"wrote the second embedder's section of {CARD}")
    return {"result": result, "ablation": ablation}


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_DATA)
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm")
    parser.add_argument("--embed-cache", type=Path, help="keep vectors in this folder (bench/embed_cache.py)")
    parser.add_argument("--refresh", action="store_true", help="collect the candidates again")
    parser.add_argument("--ablation", action="store_true", help="train without each feature group too")
    parser.add_argument(
        "--write", action="store_true", help=f"write the model trained on everything to {MODEL}"
    )
    parser.add_argument(
        "--second-embedder",
        choices=EMBEDDERS,
        help="measure, out of fold, what this embedder's cosines add as features over the candidates",
    )
    parser.add_argument(
        "--write-second",
        action="store_true",
        help="with --second-embedder: write only the model reading its columns, and its part of the card",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args()
    if args.write_second and not args.second_embedder:
        parser.error("--write-second needs --second-embedder")
    out = main(args)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    cli()
