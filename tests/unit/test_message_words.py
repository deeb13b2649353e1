"""The words of a message as the store's index of messages holds them (fulltext.message_words):
whenever a message says a text (domain.says), the text's words stand in the message's, in a row,
so that the index, searched for them, never loses a message a whole scan would have found."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mnemo.domain import says
from mnemo.store.fulltext import message_words

# letters and marks of several scripts, full-width and ligature forms, case that folds to
# more than one letter, combining marks, punctuation, spaces and an underscore
PIECES = st.sampled_from(
    [*"aAbTtEe ßSs_.,!?'-+🍵\u0301\u0353 \t\n", "ﬁ", "Ｔ", "ｅ", "é", "東", "京", "İ", "ς", "Σ", "²", "٣"]
)
TEXTS = st.lists(PIECES, max_size=24).map("".join)


def holds_in_a_row(message: list[str], text: list[str]) -> bool:
    return any(message[i : i + len(text)] == text for i in range(len(message) - len(text) + 1))


@settings(max_examples=400, deadline=None)
@given(before=TEXTS, text=TEXTS, after=TEXTS)
@example(before="I drink ", text="tea", after=" daily")
@example(before="", text="ＴＥＡ", after=".")
@example(before="STRASSE ", text="straße", after="")
@example(before="tea", text="", after="\u0353 time")
@example(before="my_", text="tea", after="_list")
def test_a_text_a_message_says_has_its_words_in_a_row_in_the_message(before, text, after):
    message = before + text + after
    for wanted in (text, text.upper(), text.strip(" .!?")):
        if says(message, wanted):
            words = message_words("u", wanted)
            assert holds_in_a_row(message_words("u", message), words), (message, wanted)


def test_the_words_are_the_persons_own_and_none_for_a_text_without_word_characters():
    assert message_words("alice", "Green tea") == message_words("alice", "GREEN  tea!")
    assert message_words("alice", "tea") != message_words("bob", "tea")
    assert message_words("alice", "🍵 !") == []
    assert len(message_words("alice", "don't forget my_list")) == 4  # don, t, forget, my_list
