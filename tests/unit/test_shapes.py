"""A name's shape says in the API's schema what domain.plain_name refuses, so that a request
the schema allows is one mnemo takes (the fuzz test sends what the schema allows)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from pydantic import TypeAdapter, ValidationError

from mnemo.domain import HIDDEN_RANGES
from mnemo.shapes import Name

NAME = TypeAdapter(Name)


def test_the_hidden_ranges_are_this_pythons_invisible_and_separating_characters():
    wanted = [c for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")]
    assert [c for low, high in HIDDEN_RANGES for c in range(low, high + 1)] == wanted


@pytest.mark.parametrize(
    "name", ["a\ufeffb", "\u200b", "x\u202ey", "a\u2028b", "tag\U000e0041", "x" * 101, "   "]
)
def test_the_schema_and_the_validator_refuse_the_same_names(name):
    with pytest.raises(ValidationError):
        NAME.validate_python(name)
    if name.strip() and len(name) <= 100:
        assert not re.match(NAME.json_schema()["pattern"], name)


@pytest.mark.parametrize("name", ["Bob", "Bøb Ødegård ✓", "王小明", "😀 chef", "a-b_c.d"])
def test_the_schema_and_the_validator_take_the_same_names(name):
    assert NAME.validate_python(f"  {name} ") == name
    assert re.match(NAME.json_schema()["pattern"], name)
