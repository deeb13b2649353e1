"""bench/fusion.py's offline part: scoring, cutting the lists, the LongMemEval subset, the folds."""

from __future__ import annotations

import os
import time

import numpy as np

from bench.fusion import (
    DATASETS,
    GRID,
    Asked,
    config_of,
    configs,
    cross_validate,
    cut,
    folds,
    fused_ids,
    lme_subset,
    scored,
    settings_of,
)
from mnemo.settings import RecallSettings
from tests.unit.helpers import fact

FACTS = [fact(f"fact number {i}") for i in range(50)]


def asked(dataset: str, group: str, answer: int, *, total: int = 1) -> Asked:
    """A question whose semantic list finds FACTS[answer] first and whose recency list finds FACTS[0]."""
    ranked = {
        "semantic": [(FACTS[answer], 0.9), *((f, 0.5) for f in FACTS[1:45] if f is not FACTS[answer])],
        "lexical": [(f, 1.0) for f in FACTS[5:48]],
        "recency": [(FACTS[0], 1.0)],
    }
    return Asked(dataset, group, {FACTS[answer].id: frozenset({"a"})}, total, ranked, [])


def test_scores_are_recall_at_10_of_answer_units_and_the_first_hits_rank():
    q = Asked("longmemeval", "longmemeval", {"x": frozenset({"t0"}), "y": frozenset({"t0", "t1"})}, 4, {}, [])
    assert q.scores(["a", "x", "b"]) == (0.25, 0.5)
    assert q.scores(["y", "x"]) == (0.5, 1.0)
    assert q.scores([f"n{i}" for i in range(10)] + ["x"]) == (0.0, 1 / 11)  # rank 11: in MRR, not in R@10
    assert q.scores([f"n{i}" for i in range(20)] + ["x"]) == (0.0, 0.0)  # past 20: nothing
    assert q.scores([]) == (0.0, 0.0)
    nothing = Asked("locomo-turns", "c", {}, 0, {}, [])
    assert nothing.scores(["x"]) == (0.0, 0.0)


def test_cut_keeps_each_search_arm_to_its_depth_and_recency_whole():
    q = asked("locomo-turns", "c", 3)
    q.ranked["topic"] = q.ranked["semantic"][:30]
    s = RecallSettings(semantic_k=10, lexical_k=20)
    lists = cut(q.ranked, s)
    assert [len(lists[a]) for a in ("semantic", "topic", "lexical", "recency")] == [10, 10, 20, 1]
    assert lists["semantic"][0][0] is FACTS[3]
    assert [len(v) for v in q.ranked.values()] == [44, 43, 1, 30]  # the collected lists stay whole


def test_a_zero_weight_leaves_the_arm_only_what_nothing_else_claims():
    ranked = {"semantic": [(f, 0.5) for f in FACTS[1:15]], "recency": [(FACTS[0], 1.0)]}
    q = Asked("locomo-turns", "c", {}, 1, ranked, [])
    on = fused_ids(q, settings_of({**configs()[-1], "recency": 0.5, "rrf_k": 10.0}))
    off = fused_ids(q, settings_of({**configs()[-1], "recency": 0.0, "rrf_k": 10.0}))
    assert on.index(FACTS[0].id) == 11  # 0.5 / (10 + 1) is 1 / (10 + 12): before the 12th, by id
    assert off.index(FACTS[0].id) == 14 and off[:14] == [f.id for f in FACTS[1:15]]


def test_the_grid_and_the_settings_round_trip():
    grid = configs()
    assert len(grid) == np.prod([len(v) for v in GRID.values()])
    assert all(config_of(settings_of(c)) == c for c in grid)
    assert config_of(RecallSettings()).keys() == GRID.keys()


def test_the_longmemeval_subset_skips_the_first_of_each_type_and_abstentions():
    raw = [{"question_id": f"{t}{i}", "question_type": t} for i in range(7) for t in ("a", "b")]
    raw.insert(0, {"question_id": "a_x_abs", "question_type": "a"})
    ids = [r["question_id"] for r in lme_subset(raw)]
    assert ids == [f"{t}{i}" for i in range(1, 4) for t in ("a", "b")]


def test_folds_leave_out_each_data_set_and_each_locomo_conversation():
    qs = [asked(d, g, 2) for d in DATASETS for g in (["c1", "c2"] if d.startswith("locomo") else [d])]
    names = [name for name, _ in folds(qs)]
    assert names == [*(f"without {d}" for d in DATASETS), "without LoCoMo c1", "without LoCoMo c2"]
    held = dict(folds(qs))["without LoCoMo c1"]
    assert [q.dataset for q, h in zip(qs, held, strict=True) if h] == ["locomo-observations", "locomo-turns"]


def test_cross_validation_picks_what_holds_on_held_out_folds_not_in_sample():
    qs = [asked(d, g, 2) for d in DATASETS for g in (["c1", "c2"] if d.startswith("locomo") else [d])]
    grid = [{**configs()[0], "lexical": w} for w in (0.5, 1.0, 1.25)]
    table = np.array([[0.2] * len(qs), [0.6] * len(qs), [0.5] * len(qs)])
    table[2, 0] = 1.0  # the third shines on one LoCoMo question (observations, c1) only
    cv = cross_validate(qs, grid, table)
    # it wins the fold that trains on that question with the least else of LoCoMo beside it...
    fold = next(r for r in cv["folds"] if r["fold"] == "without LoCoMo c2")
    assert fold["chosen"] == grid[2] and fold["chosen_held_out"] == 0.5
    assert cv["stability"]["lexical"] == {"1.0": 5, "1.25": 1}
    # ...but held out it averages 0.583 against 0.6
    assert cv["final"]["config"] == grid[1] and cv["final"]["mean_held_out"] == 0.6
    assert [round(c["mean_held_out"], 3) for c in cv["candidates"]] == [0.6, 0.583]


def test_the_scores_are_kept_beside_the_lists_and_recomputed_when_the_lists_are_newer(tmp_path):
    lists = tmp_path / "part.pickle"
    lists.write_bytes(b"")
    qs = [asked("locomo-turns", "c", 2), asked("locomo-turns", "c", 44)]
    grid = configs()[:3]
    first = scored(lists, qs, grid)
    assert first.shape == (3, 2) and (first > 0).all()
    assert (scored(lists, [], grid) == first).all()  # read back, not computed
    os.utime(lists, (time.time() + 5, time.time() + 5))
    assert scored(lists, qs[:1], grid).shape == (3, 1)
