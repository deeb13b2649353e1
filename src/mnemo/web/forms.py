"""Reading what a form or a page's query sends, leniently: a page never answers 422 for a
filter it does not understand; it shows the default instead."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar

from ..domain import known_id

E = TypeVar("E", bound=StrEnum)

PAGE_SIZE = 25


def text(data: Mapping[str, object], name: str, limit: int = 10_000) -> str:
    """A form field's text, trimmed; U+0000, which no page sends and PostgreSQL cannot store,
    left out."""
    value = data.get(name)
    return value.replace("\x00", "").strip()[:limit] if isinstance(value, str) else ""


def flag(data: Mapping[str, object], name: str) -> bool:
    return text(data, name) in ("1", "on", "true", "yes")


def choice(value: object, kind: type[E], default: E | None = None) -> E | None:
    try:
        return kind(value) if isinstance(value, str) and value else default
    except ValueError:
        return default


def number(
    value: object, default: int | None = None, *, low: int = 0, high: int = 1_000_000_000
) -> int | None:
    try:
        found = int(value) if isinstance(value, str) else default
    except ValueError:
        return default
    return found if found is None or low <= found <= high else default


def fact_id(value: str, what: str = "memory") -> str:
    """An id from a URL; one that cannot exist answers like one that does not: 404."""
    return known_id(value, what)
