"""recall/recaller.py's pure part: the topic arm's query without the names in it."""

from __future__ import annotations

from mnemo.recall.recaller import without_names


def test_names_are_taken_out_of_the_topic_query():
    assert without_names("What do Melanie's kids like?") == "What do kids like?"
    assert without_names("When did Caroline join the LGBTQ group?") == "When did join the LGBTQ group?"
    assert without_names("Hi. Is Zephyrine coming?") == "Hi. Is coming?"  # sentence openers stay
    assert without_names("what food must I avoid?") == "what food must I avoid?"
    assert without_names("Tell me about Zephyrine") == "Tell me about"
    assert without_names("Zephyrine") == "Zephyrine" and without_names("Ask Zephyrine") == "Ask"
