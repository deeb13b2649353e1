"""Reciprocal-rank fusion of the recall arms, then the budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..domain import Fact


@dataclass(frozen=True, slots=True)
class ArmHit:
    rank: int  # 1-based
    score: float  # the arm's own score: cosine similarity, bm25, or age in hours


@dataclass(slots=True)
class Hit:
    """A recalled fact and why it came back."""

    fact: Fact
    score: float
    reasons: dict[str, ArmHit] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.fact.text

    @property
    def pinned(self) -> bool:
        return "pinned" in self.reasons


def rrf(
    arms: Mapping[str, Sequence[tuple[Fact, float]]],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
) -> list[Hit]:
    """Score = sum over arms of weight / (k + rank). Pinned facts rank first regardless."""
    hits: dict[str, Hit] = {}
    for arm, ranked in arms.items():
        weight = weights.get(arm, 1.0)
        for rank, (fact, score) in enumerate(ranked, start=1):
            hit = hits.setdefault(fact.id, Hit(fact, 0.0))
            hit.reasons[arm] = ArmHit(rank, score)
            hit.score += weight / (k + rank)
    return sorted(hits.values(), key=lambda h: (not h.pinned, -h.score, h.fact.id))


def estimate_tokens(text: str) -> int:
    # ~4 characters a token for English, plus the line's date prefix
    return len(text) // 4 + 8


def within_budget(hits: Sequence[Hit], *, max_facts: int, max_tokens: int) -> list[Hit]:
    """Keep hits in order while both budgets hold; pinned facts are always kept."""
    kept: list[Hit] = []
    tokens = 0
    for hit in hits:
        cost = estimate_tokens(hit.fact.text)
        if not hit.pinned and (len(kept) >= max_facts or tokens + cost > max_tokens):
            continue
        kept.append(hit)
        tokens += cost
    return kept
