"""The parts of a question about several things: what the "parts" arm searches for."""

from __future__ import annotations

import pytest

from mnemo.recall.parts import MAX_PARTS, parts


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Which device did I set up first, the smart thermostat or the mesh network system?",
            ["Which device did I set up first", "the smart thermostat", "the mesh network system"],
        ),
        (
            "How many days passed between the day I fixed my bike and the day I upgraded its pedals?",
            ["How many days passed", "the day I fixed my bike", "the day I upgraded its pedals"],
        ),
        (
            "How much faster was my 5K run compared to last year?",
            ["How much faster was my 5K run", "last year"],
        ),
        ("¿Qué bebo por la mañana y por la noche?", ["Qué bebo por la mañana", "por la noche"]),
    ],
)
def test_a_question_about_several_things_is_cut_where_they_join(question, expected):
    assert parts(question) == expected


@pytest.mark.parametrize(
    "question",
    ["Where do I live?", "What does Melanie do to destress?", "you and me", "", "and, or; between"],
)
def test_a_question_about_one_thing_has_no_parts(question):
    assert parts(question) == []


def test_at_most_the_parts_with_the_most_meaningful_words_in_their_order():
    question = "What did the bowl, the cup, the dental chews, the flea collar and the big soft bed cost?"
    assert parts(question) == ["the dental chews", "the flea collar", "the big soft bed cost"]
    assert len(parts(question)) == MAX_PARTS
