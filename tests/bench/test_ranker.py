"""bench/ranker.py: the trees mnemo reads are LightGBM's, the folds keep groups whole, the metrics."""

from __future__ import annotations

import lightgbm
import numpy as np

from bench.ranker import (
    LGB_PARAMS,
    Asked,
    folds,
    metrics,
    objective,
    ordered_units,
    sharing_answers,
    trees_json,
)
from mnemo.recall.features import FEATURES
from mnemo.recall.ranker import Ranker


def test_the_trees_read_with_numpy_score_as_lightgbm_predicts():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3000, len(FEATURES)))
    y = (x[:, 0] + 0.5 * x[:, 6] + rng.normal(scale=0.3, size=3000) > 1).astype(float)
    booster = lightgbm.train(
        LGB_PARAMS | {"min_data_in_leaf": 5}, lightgbm.Dataset(x, y, group=[100] * 30), num_boost_round=40
    )
    unseen = rng.normal(size=(500, len(FEATURES)))
    ours = Ranker.from_json(trees_json(booster.dump_model())).scores(unseen)
    assert np.allclose(ours, booster.predict(unseen), atol=1e-9)


def asked(
    dataset: str, group: str, units: list[frozenset[str]], total: dict[str, int] | None = None
) -> Asked:
    n = len(units)
    return Asked(
        dataset,
        group,
        "kind",
        np.zeros((n, len(FEATURES))),
        np.zeros(n),
        units,
        total or {},
        np.ones(n, bool),
        [None] * n,
    )


def test_each_fold_holds_a_fifth_of_every_family_and_a_group_stays_whole():
    conversations = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
    locomo = [asked(f"locomo-{corpus}", c, []) for c in conversations for corpus in ("observations", "turns")]
    lme = [asked("longmemeval", f"q{i}", []) for i in range(10)]
    fold = folds(locomo + lme)
    assert sorted(fold[: len(locomo)]) == sorted([0, 1, 2, 3, 4] * 2)
    assert all(fold[i] == fold[i + 1] for i in range(0, len(locomo), 2))  # both corpora together
    assert sorted(fold[len(locomo) :]) == sorted([0, 1, 2, 3, 4] * 2)


def test_a_multilingual_template_shares_one_fold_in_every_language_and_embedder():
    sets = ["multilingual-en", *(f"multilingual-{lang}-e5" for lang in ("en", "de", "ja"))]
    questions = [asked(dataset, f"t{i}", []) for dataset in sets for i in range(10)]
    fold = folds(questions)
    for i in range(10):
        assert len({fold[j] for j, q in enumerate(questions) if q.group == f"t{i}"}) == 1
    assert sorted(fold[:10]) == sorted([0, 1, 2, 3, 4] * 2)


def test_the_objective_averages_the_multilingual_languages_before_the_benchmarks():
    def part(r10: float, mrr: float, more: dict | None = None) -> dict:
        return {"methods": {"mnemo (learned, out of fold)": {"R@10": r10, "MRR": mrr, **(more or {})}}}

    result = {
        "longmemeval": part(1.0, 1.0, {"session_R@10": 0.5, "session_MRR": 0.5}),
        "multilingual-en": part(0.0, 0.0),
        "multilingual-de-e5": part(0.5, 0.5),
        "multilingual-ja-e5": part(0.5, 0.5),
        "multilingual-ru-e5": part(0.5, 0.5),
    }
    assert objective(result) == (0.75 + 0.0 + 0.5) / 3


def test_questions_sharing_an_answer_session_are_one_group():
    raw = [
        {"question_id": "a", "answer_session_ids": ["s1", "s2"]},
        {"question_id": "b", "answer_session_ids": ["s3"]},
        {"question_id": "c", "answer_session_ids": ["s2", "s4"]},
        {"question_id": "d", "answer_session_ids": ["s4"]},
    ]
    assert sharing_answers(raw) == {"a": "a", "b": "b", "c": "a", "d": "a"}


def test_longmemeval_metrics_count_answer_turns_and_sessions():
    none: frozenset[str] = frozenset()
    q = asked("longmemeval", "q", [], {"t": 2, "s": 2})
    ranked = [
        none,
        frozenset({"s:a"}),
        *[none] * 5,
        frozenset({"t0", "s:a"}),
        *[none] * 5,
        frozenset({"t1", "s:b"}),
    ]
    m = metrics(q, ranked)
    assert (m["R@5"], m["R@10"], m["R@20"]) == (0, 0.5, 1)
    assert (m["session_R@5"], m["session_R@10"], m["session_R@20"]) == (0.5, 0.5, 1)
    assert m["MRR"] == 1 / 8 and m["session_MRR"] == 1 / 2


def test_what_recall_would_drop_below_the_floor_is_not_counted():
    q = asked("locomo-turns", "c", [frozenset({"hit"}), frozenset()])
    q.kept[0] = False  # the hit scores best, but recall would drop it
    assert ordered_units(q, np.array([2.0, 1.0]), 0.0) == [frozenset()]


def test_the_first_places_are_spread_over_conversations_as_recall_spreads_them():
    units = [frozenset({f"u{i}"}) for i in range(4)]
    q = asked("longmemeval", "q", units, {"t": 1, "s": 1})
    q.conversations[:] = ["a", "a", "a", "b"]
    scores = np.array([4.0, 3.9, 3.8, 3.0])
    assert ordered_units(q, scores, 0.0) == units
    # three standard deviations (0.40 each) less for each fact placed from "a": "b" comes second
    assert ordered_units(q, scores, 3.0) == [units[0], units[3], units[1], units[2]]
    # two: 3.9 - 0.79 still beats 3.0, but 3.8 - 1.58 does not
    assert ordered_units(q, scores, 2.0) == [units[0], units[1], units[3], units[2]]


def test_a_hit_past_the_twentieth_counts_for_nothing():
    hit = frozenset({"hit"})
    m = metrics(asked("locomo-turns", "c", []), [frozenset()] * 20 + [hit])
    assert m == {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "R@20": 0.0, "MRR": 0.0}
    m = metrics(asked("locomo-turns", "c", []), [frozenset(), hit])
    assert m["R@1"] == 0 and m["R@5"] == 1 and m["MRR"] == 0.5
