"""The learned ranking stage: the candidates' features, and the trees read with numpy."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest

from mnemo.domain import Source
from mnemo.recall.features import FEATURES, SECOND, candidates, features, second_columns
from mnemo.recall.ranker import MODEL, Ranker, RankerError, second_model, shipped
from tests.unit.helpers import NOW, fact

COL = {name: i for i, name in enumerate(FEATURES)}


def model(feature, threshold, leaf) -> Ranker:
    return Ranker.from_json(
        {
            "kind": "trees",
            "features": list(FEATURES),
            "feature": feature,
            "threshold": threshold,
            "leaf": leaf,
        }
    )


def test_each_tree_is_walked_for_every_candidate_and_the_leaves_summed():
    semantic, lexical = COL["semantic"], COL["lexical"]
    big = 1e308  # a padded node: always left
    trees = model(
        # tree 0: semantic <= 0 ? (lexical <= 0.5 ? -1 : 0.5) : 2 (its right branch a leaf, padded)
        # tree 1: lexical <= 0.2 ? 0 : 0.25 (one level, padded below)
        feature=[[semantic, lexical, 0], [lexical, 0, 0]],
        threshold=[[0.0, 0.5, big], [0.2, big, big]],
        leaf=[[-1.0, 0.5, 2.0, 2.0], [0.0, 0.0, 0.25, 0.25]],
    )
    rows = np.zeros((4, len(FEATURES)))
    rows[:, semantic] = [-1.0, -1.0, 1.0, 0.0]
    rows[:, lexical] = [0.0, 0.9, 0.1, 0.5]
    assert trees.scores(rows).tolist() == [-1.0, 0.5 + 0.25, 2.0, -1.0 + 0.25]
    assert trees.scores(np.zeros((0, len(FEATURES)))).shape == (0,)


def test_trees_that_are_not_complete_or_read_unknown_features_are_refused():
    with pytest.raises(RankerError, match="complete"):
        model([[0, 0]], [[0.0, 0.0]], [[1.0, 2.0]])
    with pytest.raises(RankerError, match="does not compute"):
        model([[len(FEATURES)]], [[0.0]], [[1.0, 2.0]])


def test_a_model_of_other_features_or_another_kind_is_refused():
    with pytest.raises(RankerError, match="other features"):
        Ranker.from_json({"kind": "trees", "features": [*FEATURES, "new"]})
    with pytest.raises(RankerError, match="kind"):
        Ranker.from_json({"kind": "linear", "features": list(FEATURES)})


def test_an_unusable_model_file_means_fusion(tmp_path, caplog):
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps({"kind": "trees", "features": ["semantic"]}))
    assert shipped(path) is None
    assert "fusing by rank instead" in caplog.text
    assert shipped(tmp_path / "missing.json") is None


def test_the_shipped_model_reads_this_versions_features():
    ranker = shipped()
    assert ranker is not None, "mnemo/recall/ranker.json is missing or unusable"
    assert ranker.card["out_of_fold"] and ranker.card["trained"]


def test_features_hold_the_arms_ranks_and_scores_and_the_context_of_a_conversation():
    lisbon = fact("I live in Lisbon", source=Source(conversation_id="c1"))
    tram = fact("I take tram 28 to work", source=Source(conversation_id="c1", speaker="assistant"))
    other = fact("My sister plays the cello", source=Source(conversation_id="c2"))
    old = fact("I once lived in Porto", created_at=NOW - timedelta(days=30))
    ranked = {
        "semantic": [(lisbon, 0.8), (other, 0.4), (old, 0.3)],
        "lexical": [(tram, 6.0), (lisbon, 3.0)],
    }
    hits = candidates(ranked)
    assert [h.fact for h in hits] == [lisbon, other, old, tram]
    rows = features(hits, "Which tram do I take in Lisbon?", NOW, timed=False)
    by = {h.fact.id: rows[i] for i, h in enumerate(hits)}
    assert by[lisbon.id][COL["semantic_rr"]] == 1 and by[old.id][COL["semantic_rr"]] == pytest.approx(1 / 3)
    assert by[tram.id][COL["semantic_found"]] == 0 and by[tram.id][COL["semantic_rr"]] == 0
    # cosines are standardised over those the arm returned; one it did not return reads as its lowest
    found = rows[:, COL["semantic_found"]] == 1
    assert rows[found, COL["semantic"]].mean() == pytest.approx(0, abs=1e-5)
    assert rows[found, COL["semantic"]].std() == pytest.approx(1, abs=1e-4)
    assert by[tram.id][COL["semantic"]] == by[old.id][COL["semantic"]]
    assert by[lisbon.id][COL["semantic_gap"]] == 0 and by[other.id][COL["semantic_gap"]] < 0
    assert by[tram.id][COL["lexical"]] == 1 and by[lisbon.id][COL["lexical"]] == pytest.approx(0.5)
    # the tram fact's conversation holds the best cosine; the cello's holds no other candidate
    assert by[tram.id][COL["context_semantic"]] == by[lisbon.id][COL["semantic"]]
    assert by[lisbon.id][COL["context_lexical"]] == 1 and by[tram.id][COL["context_count"]] == pytest.approx(
        np.log(2)
    )
    assert by[other.id][COL["context_count"]] == 0
    assert by[tram.id][COL["assistant"]] == 1 and by[lisbon.id][COL["assistant"]] == 0
    # the question's words are "tram", "take" and "lisbon" (the rest are stop words)
    assert by[tram.id][COL["coverage"]] == pytest.approx(2 / 3) and by[other.id][COL["coverage"]] == 0
    assert by[old.id][COL["newness"]] == 0 and by[lisbon.id][COL["newness"]] == 1
    assert by[old.id][COL["age"]] == pytest.approx(np.log1p(30))
    # how well the question's words matched at all, the same on every row: the best BM25 score, 6,
    # and two candidates found by the lexical arm
    assert np.allclose(rows[:, COL["lexical_best"]], np.log1p(6.0))
    assert np.allclose(rows[:, COL["lexical_hits"]], np.log1p(2))


def test_named_is_the_share_of_the_questions_names_a_fact_holds_as_whole_words():
    both = fact("Zephyrine and Tomasz repaired my telescope")
    one = fact("My niece is called Zephyrine")
    inside = fact("Zephyrines are not a thing, nor is Tomaszewski")  # a name inside a word is not it
    hits = candidates({"lexical": [(both, 3.0), (one, 2.0), (inside, 1.0)]})
    rows = features(hits, "Did Zephyrine and Tomasz fix the telescope?", NOW, timed=False)
    assert list(rows[:, COL["named"]]) == [1.0, 0.5, 0.0]
    unnamed = features(hits, "who fixed the telescope?", NOW, timed=False)
    assert not unnamed[:, COL["named"]].any()


def test_no_candidates_no_rows():
    assert features([], "anything", NOW, timed=True).shape == (0, len(FEATURES))


def test_pinned_facts_lead_and_the_first_places_spread_over_conversations():
    semantic = COL["semantic"]
    ranker = model(feature=[[semantic]], threshold=[[1e308]], leaf=[[1.0, 0.0]])  # scores: 1 for all

    def hit(text: str, conversation: str | None, score: float, pinned: bool = False):
        found = candidates({"semantic": [(fact(text, source=Source(conversation_id=conversation)), score)]})[
            0
        ]
        if pinned:
            found.reasons["pinned"] = found.reasons["semantic"]
        return found

    hits = [hit("a1", "a", 0.9), hit("a2", "a", 0.8), hit("b1", "b", 0.1), hit("p", None, 0.0, pinned=True)]
    rows = np.zeros((4, len(FEATURES)))
    scored = model(feature=[[semantic]], threshold=[[0.5]], leaf=[[0.0, 1.0]])
    rows[:, semantic] = [1.0, 0.9, 0.0, 0.0]  # a1 and a2 score 1, b1 and the pinned fact 0
    assert [h.text for h in scored.order(hits, rows)] == ["p", "a1", "a2", "b1"]
    # the unpinned scores' spread is 0.47: 3 of it takes a2 below b1, 2 does not
    assert [h.text for h in scored.order(hits, rows, spread=3.0, depth=3)] == ["p", "a1", "b1", "a2"]
    assert [h.text for h in scored.order(hits, rows, spread=2.0, depth=3)] == ["p", "a1", "a2", "b1"]
    assert [h.score for h in scored.order(hits, rows)] == [0.0, 1.0, 1.0, 0.0]
    assert ranker.scores(rows).tolist() == [1.0] * 4


def test_equal_scores_keep_one_order_by_fact_id_with_or_without_the_spread():
    ranker = model(feature=[[COL["semantic"]]], threshold=[[1e308]], leaf=[[1.0, 0.0]])  # 1 for all
    facts = [fact(f"f{i}", source=Source(conversation_id=f"c{i}")) for i in range(4)]
    by_id = sorted(f.id for f in facts)
    for ordering in (facts, facts[::-1], [facts[2], facts[0], facts[3], facts[1]]):
        hits = candidates({"semantic": [(f, 0.5) for f in ordering]})
        rows = np.zeros((len(hits), len(FEATURES)))
        assert [h.fact.id for h in ranker.order(hits, rows)] == by_id
        assert [h.fact.id for h in ranker.order(hits, rows, spread=0.25, depth=4)] == by_id


def test_a_second_embedders_columns_are_its_cosines_standardised_ranked_and_gapped():
    rows = np.zeros((4, len(FEATURES)), np.float32)
    rows[:, COL["semantic"]] = [0.5, -0.5, 1.5, -1.5]
    rows[:, COL["semantic_rr"]] = [0.5, 1 / 3, 1.0, 0.25]
    rows[:, COL["semantic_gap"]] = rows[:, COL["semantic"]] - 1.5
    cosines = np.array([0.9, 0.7, 0.8, 0.6])
    out = second_columns(cosines, rows)
    z = (cosines - cosines.mean()) / (cosines.std() + 1e-6)
    assert out.shape == (4, len(SECOND))
    assert np.allclose(out[:, 0], z, atol=1e-6)
    assert np.allclose(out[:, 1], [1.0, 1 / 3, 0.5, 0.25])
    assert np.allclose(out[:, 2], z - z.max(), atol=1e-6)


def test_a_candidate_without_a_second_vector_reads_as_the_first_embedder_saw_it():
    rows = np.zeros((3, len(FEATURES)), np.float32)
    rows[:, COL["semantic"]] = [0.2, 1.1, -1.3]
    rows[:, COL["semantic_rr"]] = [0.5, 1.0, 1 / 3]
    rows[:, COL["semantic_gap"]] = [-0.9, 0.0, -2.4]
    out = second_columns(np.array([0.8, np.nan, 0.6]), rows)
    assert out[1].tolist() == pytest.approx([1.1, 1.0, 0.0])
    # the others are ranked among those that have one
    assert out[[0, 2], 1].tolist() == [1.0, 0.5]
    assert second_columns(np.full(2, np.nan), rows[:2]).tolist() == rows[:2][:, [0, 2, 3]].tolist()


def test_a_model_reads_the_features_it_was_trained_on_and_the_second_one_its_own_file(tmp_path):
    wide = FEATURES + SECOND
    data = {"kind": "trees", "features": list(wide), "feature": [[len(wide) - 1]], "threshold": [[0.0]]}
    data["leaf"] = [[0.0, 1.0]]
    ranker = Ranker.from_json(data, wide)
    rows = np.zeros((2, len(wide)))
    rows[1, -1] = 1.0
    assert ranker.scores(rows).tolist() == [0.0, 1.0]
    with pytest.raises(RankerError, match="other features"):
        Ranker.from_json(data)
    assert second_model("multilingual-e5-small-q4").name == "ranker-multilingual-e5-small-q4.json"
    assert second_model("x").parent == MODEL.parent
