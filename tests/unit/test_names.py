"""recall/names.py: the topic arm's query without the names in it, and the names themselves."""

from __future__ import annotations

from mnemo.recall.names import MOST_NAMES, names, without_names


def test_names_are_taken_out_of_the_topic_query():
    assert without_names("What do Melanie's kids like?") == "What do kids like?"
    assert without_names("When did Caroline join the LGBTQ group?") == "When did join the LGBTQ group?"
    assert without_names("Hi. Is Zephyrine coming?") == "Hi. Is coming?"  # sentence openers stay
    assert without_names("what food must I avoid?") == "what food must I avoid?"
    assert without_names("Tell me about Zephyrine") == "Tell me about"
    assert without_names("Zephyrine") == "Zephyrine" and without_names("Ask Zephyrine") == "Ask"


def test_a_language_that_capitalises_nouns_keeps_its_query_whole():
    """German writes every noun with a capital: "Instrument" is no name, and taking the nouns
    out of the question would leave the topic arm nothing to search with."""
    for query in ("Welches Instrument spiele ich?", "Wo wohnt meine Schwester Miriam?"):
        assert without_names(query) == query
    assert without_names("Where does my sister Miriam live?") == "Where does my sister live?"


def test_an_opening_mark_opens_the_sentence():
    assert without_names("¿Dónde vive mi hermana Miriam?") == "¿Dónde vive mi hermana ?"
    assert without_names("«Où habite Miriam ?»") == "«Où habite ?»"


def test_the_names_a_question_holds_each_once_without_a_possessive():
    assert names("Did Melanie's kids meet Caroline and melanie?") == ["melanie", "caroline"]
    assert names("Hi. Is Zephyrine coming with Zoë?") == ["zephyrine", "zoë"]  # "Is" opens a sentence
    assert names("what food must I avoid? LGBTQ") == []  # "I" and acronyms are no names
    assert names("Wo wohnt meine Schwester Miriam?") == []  # German: every noun has a capital


def test_a_long_message_gives_at_most_the_first_names_and_odd_text_is_read_whole():
    many = "Hi, " + " and ".join(f"Person{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(200))
    assert len(names(many)) == MOST_NAMES and names(many)[0] == "personaa"
    assert names("") == [] and names("Is Zoë\ud800 here with Ravi?") == ["zoë", "ravi"]
