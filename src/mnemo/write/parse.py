"""Lenient reading of model replies: keep every valid item, report every invalid one."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass
class Parsed(Generic[M]):
    items: list[M] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def find_json(text: str) -> Any:
    """The first JSON value in a reply: bare, fenced, or wrapped in prose."""
    text = text.strip()
    if not text:
        raise ValueError("the reply was empty")
    try:
        return json.loads(text)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
            return value
        except ValueError:
            continue
    raise ValueError("the reply held no JSON")


def parse_items(raw: str, key: str, model: type[M], *, limit: int) -> Parsed[M]:
    """Items of `model` under `key` (or a bare list), at most `limit` of them."""
    out: Parsed[M] = Parsed()
    try:
        value = find_json(raw)
    except (ValueError, RecursionError) as exc:
        out.problems.append(f"unreadable reply: {exc}")
        return out
    if isinstance(value, dict):
        if key not in value:
            out.problems.append(f"reply has no {key!r} list")
            return out
        value = value[key]
    if not isinstance(value, list):
        out.problems.append(f"{key!r} is {type(value).__name__}, not a list")
        return out
    if len(value) > limit:
        out.problems.append(f"{len(value) - limit} of {len(value)} items over the limit of {limit} dropped")
        value = value[:limit]
    for index, item in enumerate(value):
        try:
            out.items.append(model.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "item"
            out.problems.append(f"item {index} dropped: {where}: {first['msg']}")
    return out
