"""The extractor's search aids, the topic question and the generic form a change replaces: read
from the model's reply like any field, and an unusable one dropped, never the fact with it."""

from __future__ import annotations

import json

import pytest

from mnemo.write.extract_prompt import SYSTEM, ExtractedFact
from mnemo.write.parse import parse_items

AIDS = ("topic", "replaces")


def read(item: dict) -> tuple[list[ExtractedFact], list[str]]:
    out = parse_items(json.dumps({"facts": [item]}), "facts", ExtractedFact, limit=20)
    return out.items, out.problems


@pytest.mark.parametrize("aid", AIDS)
@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("I live in …", "I live in …"),
        ("  Ich wohne in …\n", "Ich wohne in …"),
        ("", None),
        ("   \t ", None),
        (None, None),
        (42, None),
        (True, None),
        ({"where": ["somewhere"]}, None),
        (["I live in …"], None),
        ("\x00\x1b[2J", "[2J"),  # control characters are no content
    ],
)
def test_an_unusable_aid_is_dropped_and_the_fact_kept(aid, given, kept):
    (fact,), problems = read({"text": "I moved to Porto", aid: given})
    assert problems == []
    assert fact.text == "I moved to Porto"
    assert getattr(fact, aid) == kept


@pytest.mark.parametrize("aid", AIDS)
def test_an_absent_aid_is_none(aid):
    (fact,), problems = read({"text": "I moved to Porto"})
    assert problems == [] and getattr(fact, aid) is None


@pytest.mark.parametrize("aid", AIDS)
def test_a_huge_aid_is_cut_to_200_characters(aid):
    (fact,), problems = read({"text": "I moved to Porto", aid: "I live in " + "é" * 100_000})
    assert problems == []
    value = getattr(fact, aid)
    assert value == ("I live in " + "é" * 190) and len(value) == 200


def test_each_aid_is_read_on_its_own():
    (fact,), _ = read({"text": "I moved to Porto", "topic": "Where do I live?", "replaces": 7})
    assert (fact.topic, fact.replaces) == ("Where do I live?", None)
    (fact,), _ = read({"text": "I moved to Porto", "topic": [], "replaces": "I live in …"})
    assert (fact.topic, fact.replaces) == (None, "I live in …")


def test_the_prompt_asks_for_the_generic_form_in_the_users_language():
    assert '"replaces"' in SYSTEM
    assert "value left open" in SYSTEM and "in the user's language" in SYSTEM
