"""recall/fuse.py: reciprocal-rank fusion of the recall arms, pinned facts first, then the budget."""

from __future__ import annotations

import pytest

from mnemo.recall.fuse import ArmHit, Hit, estimate_tokens, rrf, within_budget
from tests.unit.helpers import fact

A, B, C = fact("I live in Lisbon"), fact("I play the cello"), fact("My sister is Ana")
PINNED = fact("My name is Alice Moreau", pinned=True)


def test_scores_add_weight_over_k_plus_rank_across_arms():
    hits = rrf(
        {"semantic": [(A, 0.9), (B, 0.8)], "lexical": [(B, 3.0), (C, 2.0)]},
        {"semantic": 2.0},  # an arm without a weight counts once
    )
    assert [h.fact for h in hits] == [B, A, C]
    by_fact = {h.fact.id: h for h in hits}
    assert by_fact[B.id].score == pytest.approx(2 / 62 + 1 / 61)
    assert by_fact[A.id].score == pytest.approx(2 / 61)
    assert by_fact[C.id].score == pytest.approx(1 / 62)
    assert by_fact[B.id].reasons == {"semantic": ArmHit(2, 0.8), "lexical": ArmHit(1, 3.0)}
    assert by_fact[C.id].reasons == {"lexical": ArmHit(2, 2.0)}


def test_k_sets_how_fast_a_rank_counts_less():
    hits = rrf({"semantic": [(A, 0.9), (B, 0.5)]}, {}, k=0)
    assert [(h.fact, h.score) for h in hits] == [(A, 1.0), (B, 0.5)]


def test_a_pinned_fact_ranks_first_whatever_its_score():
    hits = rrf({"semantic": [(A, 0.9), (B, 0.8)], "pinned": [(PINNED, 0.0)]}, {"pinned": 0.001})
    assert [h.fact for h in hits] == [PINNED, A, B]
    assert [h.pinned for h in hits] == [True, False, False]


def test_equal_scores_are_ordered_by_fact_id():
    first, second = sorted([A, B], key=lambda f: f.id)
    hits = rrf({"semantic": [(second, 0.5)], "lexical": [(first, 9.0)]}, {})
    assert [h.fact for h in hits] == [first, second]
    assert hits[0].score == hits[1].score == pytest.approx(1 / 61)


def test_no_arms_no_hits():
    assert rrf({}, {}) == [] and rrf({"semantic": []}, {"semantic": 1.0}) == []


@pytest.mark.parametrize(("length", "tokens"), [(0, 8), (3, 8), (4, 9), (7, 9), (40, 18), (2000, 508)])
def test_a_line_costs_a_token_per_four_characters_plus_its_date(length, tokens):
    assert estimate_tokens("x" * length) == tokens


def hit(length: int, *, pinned: bool = False) -> Hit:
    made = fact("x" * length, pinned=pinned)
    return Hit(made, 0.0, {"pinned": ArmHit(1, 0.0)} if pinned else {})


def test_the_budget_keeps_hits_in_order_up_to_the_number_of_facts():
    hits = [hit(8), hit(8), hit(8)]
    assert within_budget(hits, max_facts=2, max_tokens=1000) == hits[:2]
    assert within_budget(hits, max_facts=0, max_tokens=1000) == []


def test_a_hit_over_the_token_budget_is_passed_over_for_a_smaller_one_after_it():
    ten, twelve, nine = hit(8), hit(16), hit(4)  # 10, 12 and 9 tokens
    assert within_budget([ten, twelve, nine], max_facts=10, max_tokens=20) == [ten, nine]
    assert within_budget([ten, twelve, nine], max_facts=10, max_tokens=22) == [ten, twelve]


def test_pinned_hits_are_kept_past_both_budgets_and_use_them_up():
    pinned, other = hit(60, pinned=True), hit(8)  # 23 and 10 tokens
    assert within_budget([pinned, other], max_facts=0, max_tokens=5) == [pinned]
    assert within_budget([pinned, other], max_facts=5, max_tokens=30) == [pinned]
    assert within_budget([pinned, other], max_facts=5, max_tokens=33) == [pinned, other]
    assert within_budget([other, pinned], max_facts=1, max_tokens=100) == [other, pinned]
