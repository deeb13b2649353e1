"""The words a lexical search looks for: without those that say nothing, in the query's language."""

from __future__ import annotations

import pytest

from mnemo.language import language
from mnemo.store.fulltext import query_words


@pytest.mark.parametrize(
    ("query", "code", "words"),
    [
        ("Wo wohnt meine Schwester?", "de", ["wohnt", "schwester"]),
        ("Où travaille mon fils ?", "fr", ["travaille", "fils"]),
        ("¿Con quién vive mi hermana?", "es", ["vive", "hermana"]),
        ("Onde trabalha o meu irmão?", "pt", ["trabalha", "irmão"]),
        ("Где живёт моя сестра?", "ru", ["живёт", "сестра"]),
        # English keeps its own short list: "son" is a word to search here, not in French
        ("What does my son do for a living?", "en", ["son", "living"]),
        ("Who is my GP?", "en", ["gp"]),
    ],
)
def test_each_language_leaves_out_its_own_empty_words(query, code, words):
    assert language(query) == code
    assert query_words(query) == words


def test_a_query_of_only_empty_words_searches_for_nothing():
    assert query_words("what is it?") == [] and query_words("") == [] and query_words("¿?") == []


def test_english_without_a_foreign_function_word_never_asks_the_model():
    """The model costs a second to load: an English query does without it."""
    from mnemo.language import foreign

    assert foreign("Where does my sister Ana live these days?") is None
    assert foreign("What does my son do?") == "en"  # "son" is French and Spanish too: asked
    assert foreign("Wo wohnt meine Schwester?") == "de"


def test_a_lone_surrogate_in_a_query_is_no_error():
    from mnemo.recall.names import without_names

    assert query_words("Wo wohnt meine \ud800 Schwester?") == ["wohnt", "schwester"]
    german = "Wo wohnt meine \ud800 Schwester Miriam?"
    assert without_names(german) == german
