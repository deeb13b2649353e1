"""The learned ranking stage: a model over the candidates' features (recall/features.py).

The model is a file: `ranker.json` beside this module (its card, RANKER.md,
says what it was trained on and how it measured), made by bench/ranker.py:
a sum of regression trees (gradient boosting with LightGBM's lambdarank
objective), each stored as a complete binary tree of one depth in heap order
(node i's children are 2i + 1, taken when the feature is at most the node's
threshold, and 2i + 2; a shallower branch is padded with nodes whose
threshold is infinite, its leaf repeated). So every tree is walked for every
candidate at once, one level a step, with numpy alone.
A model trained on other features than this version computes is refused
(`RankerError`), and recall falls back to reciprocal-rank fusion. With a second
embedder (recall/second.py) recall reads `ranker-<its name>.json` instead, a
model of FEATURES and the second embedder's SECOND columns, made by
`bench/ranker.py --second-embedder NAME --write`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .features import FEATURES
from .fuse import Hit

MODEL = Path(__file__).with_name("ranker.json")
log = logging.getLogger(__name__)


class RankerError(ValueError):
    """A model file this version cannot use."""


@dataclass(frozen=True)
class Ranker:
    arrays: dict[str, np.ndarray]
    card: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any], features: tuple[str, ...] = FEATURES) -> Ranker:
        if tuple(data.get("features", ())) != features:
            raise RankerError("the model was trained on other features than this version computes")
        if data.get("kind") != "trees":
            raise RankerError(f"unknown model kind {data.get('kind')!r}")
        feature = np.asarray(data["feature"], np.intp)
        threshold = np.asarray(data["threshold"], np.float64)
        leaf = np.asarray(data["leaf"], np.float64)
        complete = feature.ndim == leaf.ndim == 2 and feature.shape == threshold.shape
        if not (
            complete and leaf.shape[1] == feature.shape[1] + 1 and leaf.shape[1] & (leaf.shape[1] - 1) == 0
        ):
            raise RankerError("the model's trees are not complete binary trees")
        if feature.size and not 0 <= feature.min() <= feature.max() < len(features):
            raise RankerError("the model reads a feature this version does not compute")
        return cls({"feature": feature, "threshold": threshold, "leaf": leaf}, data.get("card", {}))

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """One score per row of features: higher is better."""
        x = np.asarray(rows, np.float64).T.ravel()  # feature-major: feature f of row r at f * n + r
        n = len(rows)
        feature, threshold, leaf = self.arrays["feature"], self.arrays["threshold"], self.arrays["leaf"]
        trees, inner = feature.shape
        node = np.zeros((trees, n), np.intp)
        at = np.arange(trees)[:, None] * inner  # each tree's first node in the flat arrays
        columns = np.arange(n)
        for _ in range(int(np.log2(inner + 1))):
            flat = at + node
            right = x.take(feature.take(flat) * n + columns) > threshold.take(flat)
            node = 2 * node + 1 + right
        out: np.ndarray = leaf.take(node + (np.arange(trees)[:, None] * (inner + 1) - inner)).sum(axis=0)
        return out

    def order(
        self, hits: Sequence[Hit], rows: np.ndarray, *, spread: float = 0.0, depth: int = 0
    ) -> list[Hit]:
        """The hits best first by the model (pinned facts first regardless), each hit's score
        the model's; with `spread`, the first `depth` places spread over conversations (spread_out)."""
        scores = self.scores(rows) if len(hits) else np.zeros(0)
        for hit, score in zip(hits, scores, strict=True):
            hit.score = float(score)
        pinned = [h for h in hits if h.pinned]
        # best first, a tie by fact id: with or without the spread, equal scores keep one order
        rest = sorted(
            (i for i, h in enumerate(hits) if not h.pinned), key=lambda i: (-scores[i], hits[i].fact.id)
        )
        by_key = sorted(pinned, key=lambda h: h.fact.id)
        if spread > 0 and depth > 0:
            picked = spread_out(
                scores[rest], [hits[i].fact.source.conversation_id for i in rest], spread, depth
            )
            return by_key + [hits[rest[i]] for i in picked]
        return by_key + sorted((hits[i] for i in rest), key=lambda h: (-h.score, h.fact.id))


def spread_out(
    scores: np.ndarray, conversations: Sequence[str | None], spread: float, depth: int
) -> list[int]:
    """Indices best first, the first `depth` chosen one at a time: each place goes to the best
    score less `spread` standard deviations of the scores for every fact already placed from the
    same conversation (a question about several sessions finds more of them; a fact with no
    conversation is its own). The rest follow by score."""
    n = len(scores)
    by_score = sorted(range(n), key=lambda i: -scores[i])
    if n < 2:
        return by_score
    known: dict[str, int] = {}
    codes = np.array([known.setdefault(c, len(known)) if c else -1 - i for i, c in enumerate(conversations)])
    step = spread * float(scores.std())
    adjusted = np.array(scores, np.float64)
    out: list[int] = []
    for _ in range(min(depth, n)):
        i = int(np.argmax(adjusted))
        out.append(i)
        adjusted[codes == codes[i]] -= step
        adjusted[i] = -np.inf
    placed = set(out)
    return out + [i for i in by_score if i not in placed]


def second_model(name: str) -> Path:
    """The file of the model that reads a second embedder's columns beside FEATURES."""
    return MODEL.with_name(f"ranker-{name}.json")


@cache
def shipped(path: Path = MODEL, features: tuple[str, ...] = FEATURES) -> Ranker | None:
    """The model shipped with this version (`features`: FEATURES, or FEATURES and SECOND for
    a second embedder's); None (recall fuses by rank instead) when there is none or it cannot
    be used, which is logged once."""
    try:
        return Ranker.from_json(json.loads(path.read_text()), features)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        log.warning("recall: no usable ranking model at %s (%s); fusing by rank instead", path, e)
        return None
