"""What the ranking stage knows of each candidate: one row of numbers per fact the arms found.

Every arm hands its candidates (recall/recaller.py, `Recaller.ranked`); each
distinct fact becomes a row of FEATURES, read by the learned ranker
(recall/ranker.py) and by bench/ranker.py, which trains it. The row is built
from the arms' own scores and ranks, the words of the query, when the fact was
said, and its context: the other candidates learnt from the same conversation
(a hit lifts its session). Changing a feature means training the model again
(`bench/ranker.py`); the model file names the features it was trained on and
is refused when they differ.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from ..domain import Fact, SourceKind
from ..store.fulltext import query_words
from .fuse import ArmHit, Hit
from .names import names

FEATURES: tuple[str, ...] = (
    # cosines are standardised over the candidates (the mean 0, the spread 1), so that the
    # model reads any embedder's cosines alike: each model has a range of its own
    "semantic",  # cosine with the question (the lowest the arm returned, when it did not return it)
    "semantic_found",  # 1 when the semantic arm returned it
    "semantic_rr",  # 1 / its rank in the semantic arm (0 when not found)
    "semantic_gap",  # its cosine less the best candidate's
    "topic",  # cosine with the question without its names (the semantic cosine when it names no one)
    "topic_rr",
    "parts",  # best cosine with a part of a question about several things (recall/parts.py)
    "parts_rr",
    "lexical",  # its BM25 score over the best candidate's (0 when the lexical arm did not return it)
    "lexical_rr",
    # how well the question's words matched at all (the same for every candidate): where they
    # matched little (a question worded unlike its fact), the lexical scores tell little
    "lexical_best",  # log(1 + the best BM25 score among the candidates)
    "lexical_hits",  # log(1 + how many candidates the lexical arm returned)
    "coverage",  # share of the question's words found in the fact (their first five letters, anywhere)
    "named",  # share of the names the question holds (recall/names.py) that the fact holds, whole
    "timed",  # 1 when the question names a time and something was said (or became true) then
    "in_time",  # 1 when the time arm returned it (said or become true in the named time)
    "age",  # log(1 + days since it was said)
    "newness",  # 1 for the newest candidate, 0 for the oldest
    "context_semantic",  # best cosine among the other candidates of its conversation (its own when none)
    "context_lexical",  # best lexical score among them, over the best candidate's
    "context_count",  # log(1 + how many other candidates come from its conversation)
    "assistant",  # 1 when the assistant said it
    "length",  # log of its length in characters
    "mentions",  # log of the times it was said
    "pinned",
)
# With a second embedder (MNEMO_EMBED_SECOND, recall/second.py), three more columns after
# FEATURES, read by the second model (ranker-<name>.json): the second embedder's cosine of the
# question with each candidate, standardised over the candidates as `semantic` is, 1 / its rank
# among them, and its gap to the best.
SECOND: tuple[str, ...] = ("second", "second_rr", "second_gap")
_STEM = 5


def candidates(ranked: Mapping[str, Sequence[tuple[Fact, float]]]) -> list[Hit]:
    """Every fact any arm returned, once, with each arm's rank and score (its reasons);
    in the order first found, arm by arm."""
    hits: dict[str, Hit] = {}
    for arm, found in ranked.items():
        for rank, (fact, score) in enumerate(found, start=1):
            hits.setdefault(fact.id, Hit(fact, 0.0)).reasons[arm] = ArmHit(rank, score)
    return list(hits.values())


def _arm(hits: Sequence[Hit], arm: str) -> tuple[np.ndarray, np.ndarray]:
    """The arm's score and 1 / rank for each hit (NaN and 0 where the arm did not return it)."""
    found = [h.reasons.get(arm) for h in hits]
    score = np.array([np.nan if r is None else r.score for r in found], np.float64)
    inverse = np.array([0.0 if r is None else 1 / r.rank for r in found], np.float64)
    return score, inverse


def _standardised(score: np.ndarray, mean: float, spread: float) -> np.ndarray:
    """The scores less the mean over the spread; a missing one reads as the lowest present."""
    low = np.nanmin(score) if not np.isnan(score).all() else mean
    return (np.where(np.isnan(score), low, score) - mean) / spread


def _best_of_others(values: np.ndarray, groups: Sequence[str | None], alone: np.ndarray) -> np.ndarray:
    """Per hit, the best value among the other hits of its group; `alone` where there is none."""
    out = alone.copy()
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        if g:
            members.setdefault(g, []).append(i)
    for idx in members.values():
        if len(idx) < 2:
            continue
        vals = values[idx]
        order = np.argsort(-vals, kind="stable")
        first, second = vals[order[0]], vals[order[1]]
        out[idx] = first
        out[idx[order[0]]] = second
    return out


def features(hits: Sequence[Hit], query: str, now: datetime, *, timed: bool) -> np.ndarray:
    """One row of FEATURES per hit, in their order."""
    n = len(hits)
    out = np.zeros((n, len(FEATURES)), np.float32)
    if not n:
        return out
    col = {name: i for i, name in enumerate(FEATURES)}
    sem, sem_rr = _arm(hits, "semantic")
    present = sem[~np.isnan(sem)]
    mean, spread = (present.mean(), present.std() + 1e-6) if len(present) else (0.0, 1.0)
    semantic = _standardised(sem, mean, spread)
    topic, topic_rr = _arm(hits, "topic")
    if np.isnan(topic).all():  # the arm did not run: the question names no one
        topic_z, topic_rr = semantic, sem_rr
    else:
        topic_z = _standardised(topic, mean, spread)
    part, parts_rr = _arm(hits, "parts")
    if np.isnan(part).all():  # the question has no parts
        parts_z, parts_rr = semantic, sem_rr
    else:
        parts_z = _standardised(part, mean, spread)
    lex, lex_rr = _arm(hits, "lexical")
    lexical = np.nan_to_num(lex / (np.nanmax(lex) if not np.isnan(lex).all() else 1.0), nan=0.0)
    stems = [w[:_STEM] for w in dict.fromkeys(query_words(query))]
    texts = [h.fact.text.lower() for h in hits]
    said = np.array([h.fact.created_at.timestamp() for h in hits])
    conversations = [h.fact.source.conversation_id for h in hits]
    counts = Counter(c for c in conversations if c)
    members = np.array([counts[c] - 1 if c else 0 for c in conversations], np.float64)
    out[:, col["semantic"]] = semantic
    out[:, col["semantic_found"]] = ~np.isnan(sem)
    out[:, col["semantic_rr"]] = sem_rr
    out[:, col["semantic_gap"]] = semantic - semantic.max()
    out[:, col["topic"]] = topic_z
    out[:, col["topic_rr"]] = topic_rr
    out[:, col["parts"]] = parts_z
    out[:, col["parts_rr"]] = parts_rr
    out[:, col["lexical"]] = lexical
    out[:, col["lexical_rr"]] = lex_rr
    found_lex = lex[~np.isnan(lex)]
    out[:, col["lexical_best"]] = np.log1p(max(0.0, float(found_lex.max()))) if len(found_lex) else 0.0
    out[:, col["lexical_hits"]] = np.log1p(len(found_lex))
    if stems:
        out[:, col["coverage"]] = [sum(s in t for s in stems) / len(stems) for t in texts]
    if named := [re.compile(rf"\b{re.escape(name)}\b") for name in names(query)]:
        out[:, col["named"]] = [sum(bool(p.search(t)) for p in named) / len(named) for t in texts]
    out[:, col["timed"]] = timed
    out[:, col["in_time"]] = [("time" in h.reasons) for h in hits]
    out[:, col["age"]] = np.log1p(np.maximum(0.0, now.timestamp() - said) / 86400)
    out[:, col["newness"]] = (said - said.min()) / ((said.max() - said.min()) or 1.0)
    out[:, col["context_semantic"]] = _best_of_others(semantic, conversations, semantic)
    out[:, col["context_lexical"]] = _best_of_others(lexical, conversations, np.zeros(n))
    out[:, col["context_count"]] = np.log1p(members)
    out[:, col["assistant"]] = [
        h.fact.source.speaker == "assistant" or h.fact.source.kind == SourceKind.ASSISTANT_MESSAGE
        for h in hits
    ]
    out[:, col["length"]] = np.log([len(t) + 1 for t in texts])
    out[:, col["mentions"]] = np.log([max(1, h.fact.mentions) for h in hits])
    out[:, col["pinned"]] = [("pinned" in h.reasons) for h in hits]
    return out


def second_columns(cosines: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The SECOND columns of the candidates whose FEATURES rows are `rows`, from the second
    embedder's cosines of the question with them; a candidate with no second vector yet (NaN:
    written since the vectors were last filled in) reads as the first embedder saw it."""
    n = len(cosines)
    out = np.zeros((n, len(SECOND)), np.float32)
    present = ~np.isnan(cosines)
    col = {name: i for i, name in enumerate(FEATURES)}
    out[:] = rows[:, [col["semantic"], col["semantic_rr"], col["semantic_gap"]]]
    if present.any():
        found = cosines[present]
        z = (found - found.mean()) / (found.std() + 1e-6)
        rank = np.empty(len(found))
        rank[np.argsort(-found, kind="stable")] = np.arange(1, len(found) + 1)
        out[present] = np.column_stack([z, 1 / rank, z - z.max()])
    return out
