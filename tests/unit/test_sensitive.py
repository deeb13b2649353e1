"""The detector and its masks: realistic values are found, ordinary numbers are not."""

from __future__ import annotations

import pytest

from mnemo.domain import GateAction, GatePolicy, InvalidInput, Sensitive
from mnemo.sensitive import find, gate_fact, mask, screen
from tests.sensitive_cases import MASKS, ORDINARY, SAID

EVERYTHING = set(Sensitive)


@pytest.mark.parametrize(("text", "needle", "kind"), SAID)
def test_each_realistic_value_is_found_and_masked_whole(text, needle, kind):
    assert [f.kind for f in find(text)] == [Sensitive(kind)]
    masked = mask(text, EVERYTHING)
    assert needle not in masked
    assert masked.count("[") == 1
    if kind in MASKS:
        assert MASKS[kind] in masked


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_numbers_stay_as_they_are(text):
    assert find(text) == []
    assert mask(text, EVERYTHING) == text


def test_a_mask_keeps_the_last_four_digits_at_most():
    masked = mask("4111 1111 1111 1111 and GB82 WEST 1234 5698 7654 32", EVERYTHING)
    assert masked == "[card ending 1111] and [bank account ending 5432]"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("call +1 415 555 2671 tomorrow", Sensitive.PHONE),
        ("or (415) 555-2671", Sensitive.PHONE),
        ("Ruf an: +49 30 901820", Sensitive.PHONE),
        ("write to bob.smith@example.com.", Sensitive.EMAIL),
        ("Steuer-ID 36574261809", Sensitive.GOVERNMENT_ID),
        ("codice fiscale RCCMNL83S18D969H", Sensitive.GOVERNMENT_ID),
        ("NIE X1234567L", Sensitive.GOVERNMENT_ID),
    ],
)
def test_phones_addresses_and_more_ids(text, kind):
    assert [f.kind for f in find(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "ünïcödé 😀 4242 4242 4242 4241",  # fails Luhn
        "the API key is in the drawer",
        "password = <your_password>",
        "a year range (1623-1644) and a time 15:36:06.0000000",
        "9" * 10_000,
    ],
)
def test_edges_find_nothing(text):
    assert find(text) == []


def test_a_private_key_without_its_end_line_is_masked_to_the_end():
    text = "here:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQ29tbWVudA"
    assert mask(text, EVERYTHING) == "here:\n[credential]"


def test_the_policy_decides_what_is_masked_in_a_message_and_what_in_a_memory():
    text = "card 4242 4242 4242 4242, mail bob@example.com, key sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    defaults = screen(text, GatePolicy())
    assert defaults.masked == "card [card ending 4242], mail bob@example.com, key [credential]"
    gated = gate_fact(text, GatePolicy())
    assert gated.blocked == (Sensitive.CREDENTIAL,)
    held = gate_fact("card 4242 4242 4242 4242", GatePolicy().changed({"card": "hold"}))
    assert held.held == (Sensitive.CARD,) and held.text == "card 4242 4242 4242 4242"
    assert held.reason == "held for review: holds a payment card number; sensitive data: card held"
    allowed = GatePolicy().changed({"card": "allow", "email": "redact"})
    assert screen(text, allowed).masked == "card 4242 4242 4242 4242, mail [email address], key [credential]"


def test_a_policy_keeps_only_what_differs_from_the_defaults():
    policy = GatePolicy().changed({"card": "allow", "credential": "block"})
    assert policy.choices() == {"card": "allow"}
    assert policy.action(Sensitive.CARD) == GateAction.ALLOW
    assert policy.changed({"card": "redact"}).choices() == {}
    assert GatePolicy().actions() == {
        "credential": "block",
        "card": "redact",
        "bank_account": "redact",
        "government_id": "redact",
        "phone": "allow",
        "email": "allow",
    }


@pytest.mark.parametrize(("changes", "word"), [({"cards": "allow"}, "cards"), ({"card": "shred"}, "shred")])
def test_an_unknown_category_or_action_is_refused(changes, word):
    with pytest.raises(InvalidInput, match=word):
        GatePolicy().changed(changes)
