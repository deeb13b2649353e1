"""The person's language, without a database: explicit requests and the near-duplicate rule read
the languages people write in, and keep their words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.domain import Message
from mnemo.write.extract import ExplicitExtractor
from mnemo.write.extract_prompt import SYSTEM
from mnemo.write.writer import same_particulars


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("Remember that my cat is Miso.", "My cat is Miso"),
        ("Bitte merk dir: ich trinke keinen Kaffee.", "Ich trinke keinen Kaffee"),
        ("Souviens-toi que j'habite à Lyon.", "J'habite à Lyon"),
        ("Por favor, recuerda que soy vegetariana.", "Soy vegetariana"),
        ("Lembre-se de que moro no Porto!", "Moro no Porto"),
        ("Ricordati che ho due figlie.", "Ho due figlie"),
    ],
)
async def test_an_explicit_request_is_kept_in_the_persons_words(said, kept):
    found = await ExplicitExtractor().extract([Message("user", said, id="m1")], "c1", datetime.now(UTC))
    assert [p.text for p in found.proposals] == [kept]
    assert found.proposals[0].source.message_ids == ("m1",)


@pytest.mark.parametrize(
    "said", ["I remember my childhood fondly", "Ich erinnere mich gern an Lissabon", "Recuerdo el mar"]
)
async def test_remembering_something_is_no_request(said):
    found = await ExplicitExtractor().extract([Message("user", said, id="m1")], "c1", datetime.now(UTC))
    assert found.proposals == []


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Ich trinke Kaffee", "Ich trinke keinen Kaffee"),
        ("J'aime le café", "Je n'aime pas le café"),
        ("Como carne", "Nunca como carne"),
        ("Eu bebo leite", "Eu não bebo leite"),
        ("Mangio carne", "Non mangio carne"),
        ("Ik rook", "Ik rook niet"),
    ],
)
def test_a_negated_sentence_is_never_a_restatement(a, b):
    assert not same_particulars(a, b)
    assert same_particulars(b, b)


def test_the_extractor_is_asked_to_keep_the_persons_language():
    assert "in the language the user wrote it in: never translate" in SYSTEM
