"""write/parse.py: a model's reply read leniently, every valid item kept, every invalid one reported."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from mnemo.write.parse import find_json, parse_items, safe_text, salvage


class Item(BaseModel):
    text: str
    confidence: float = 0.5


def parsed(raw: str, limit: int = 10) -> tuple[list[tuple[str, float]], list[str]]:
    out = parse_items(raw, "facts", Item, limit=limit)
    return [(i.text, i.confidence) for i in out.items], out.problems


# find_json


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"facts": []}', {"facts": []}),
        ("\ufeff  [1, 2]\n", [1, 2]),
        ('Here you go:\n```json\n{"facts": [1]}\n```\nAnything else?', {"facts": [1]}),
        ("```\n[true]\n```", [True]),
        ('```json\n{broken\n```\nand then\n```json\n{"a": 2}\n```', {"a": 2}),
        ('Sure! {"a": [1, {"b": null}]} Hope that helps.', {"a": [1, {"b": None}]}),
        ('I think [maybe] this: {"a": 1}', {"a": 1}),
        ("42", 42),
    ],
)
def test_find_json_finds_the_first_value_bare_fenced_or_in_prose(reply, value):
    assert find_json(reply) == value


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "the reply was empty"),
        (" \n\t", "the reply was empty"),
        ("I could not find any facts.", "the reply held no JSON"),
        ('{"facts": [', "the reply held no JSON"),
        ("[" * 100_000, "the reply held no JSON"),  # too deep for the decoder: no RecursionError
    ],
)
def test_find_json_refuses_a_reply_without_json(reply, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        find_json(reply)


def test_find_json_gives_up_after_64_places_a_value_might_start():
    assert find_json("{x " * 63 + '{"a": 1}') == {"a": 1}
    with pytest.raises(ValueError, match="held no JSON"):
        find_json("{x " * 64 + '{"a": 1}')


# salvage


@pytest.mark.parametrize(
    ("reply", "items"),
    [
        ('{"facts": [{"text": "a"}, {"text": "b"}, {"text": "c', [{"text": "a"}, {"text": "b"}]),
        ('{"facts" :\n[ 1 ,\n 2 , oops, 3]}', [1, 2]),
        ("\ufeff[1, 2, 3", [1, 2, 3]),
        ('[1, 2, {"x": ', [1, 2]),
        ('{"facts": []}', []),
        ('{"other": [1, 2]}', []),
        ('{"f.cts": [1]}', []),  # the key is matched literally
        ("no list at all", []),
    ],
)
def test_salvage_keeps_the_whole_items_before_the_damage(reply, items):
    assert salvage(reply, "facts") == items


# safe_text


def test_safe_text_blanks_control_characters_and_lone_surrogates_but_keeps_spacing():
    assert safe_text("a\x00b\x1fc\x7fd\x85e\x9f\ud800f") == "a b c d e  f"
    assert safe_text("tab\there\nline\rreturn\xa0nbsp é 😀") == "tab\there\nline\rreturn\xa0nbsp é 😀"


# parse_items


def test_valid_items_are_kept_and_each_invalid_one_is_reported_by_its_index():
    items, problems = parsed(
        '{"facts": [{"text": "a"}, {"text": 5}, {"nope": 1}, 7, {"text": "b", "confidence": 1}]}'
    )
    assert items == [("a", 0.5), ("b", 1.0)]
    assert problems == [
        "item 1 dropped: text: Input should be a valid string",
        "item 2 dropped: text: Field required",
        "item 3 dropped: item: Input should be a valid dictionary or instance of Item",
    ]


def test_a_bare_list_and_a_fenced_reply_are_read_alike():
    assert parsed('[{"text": "a"}]') == ([("a", 0.5)], [])
    assert parsed('```json\n{"facts": [{"text": "a"}]}\n```') == ([("a", 0.5)], [])


def test_items_over_the_limit_are_dropped_and_counted():
    items, problems = parsed('{"facts": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}', limit=2)
    assert items == [("a", 0.5), ("b", 0.5)]
    assert problems == ["1 of 3 items over the limit of 2 dropped"]


def test_a_reply_cut_short_keeps_its_whole_items():
    items, problems = parsed('{"facts": [{"text": "a"}, {"text": "b"}, {"te')
    assert items == [("a", 0.5), ("b", 0.5)]
    assert problems == ["damaged reply: kept the 2 whole item(s) before the damage"]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "unreadable reply: the reply was empty"),
        ("Nothing to remember here.", "unreadable reply: the reply held no JSON"),
        ('{"other": []}', "reply has no 'facts' list"),
        ('{"facts": {"text": "a"}}', "'facts' is dict, not a list"),
        ('{"facts": "a"}', "'facts' is str, not a list"),
    ],
)
def test_a_reply_without_a_list_of_items_is_one_problem(reply, problem):
    assert parsed(reply) == ([], [problem])


def test_one_object_where_the_list_was_due_is_read_as_a_list_of_one_when_unwrapping():
    out = parse_items(
        '{"facts": {"text": "I keep bees", "confidence": 0.9}}', "facts", Item, limit=10, unwrap=True
    )
    assert [(i.text, i.confidence) for i in out.items] == [("I keep bees", 0.9)] and not out.unreadable
    assert out.problems == ["'facts' is one object, not a list: read as a list of one"]


def test_control_characters_in_an_items_strings_become_spaces():
    items, problems = parsed(r'[{"text": "a\u0000b\ud800c"}]')
    assert items == [("a b c", 0.5)] and problems == []
