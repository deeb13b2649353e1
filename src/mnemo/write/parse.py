"""Lenient reading of model replies: keep every valid item, report every invalid one."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
# where a JSON value may start in prose; past this many tries the reply is given up on,
# so that a megabyte of brackets costs a bounded amount of work
_MAX_STARTS = 64
# control characters (but tab and newlines) and lone surrogates: PostgreSQL cannot store
# NUL, nothing can encode a lone surrogate to UTF-8, and the rest only hides text
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_ERRORS = (ValueError, RecursionError)
DAMAGED = "the rest of the reply: cut off or unreadable"


@dataclass
class Parsed(Generic[M]):
    items: list[M] = field(default_factory=list)
    places: list[int] = field(default_factory=list)  # each item's place in the reply's list
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False  # the reply as a whole was unusable (no list found at all)
    # the items not kept, by why: words that quote nothing of the item (a turn shows them)
    dropped: Counter[str] = field(default_factory=Counter)


def find_json(text: str) -> Any:
    """The first JSON value in a reply: bare, fenced, or wrapped in prose."""
    text = text.strip().lstrip("\ufeff")
    if not text:
        raise ValueError("the reply was empty")
    try:
        return json.loads(text)
    except _ERRORS:
        pass  # not bare JSON: look for it in fences or prose below
    for block in _FENCE.findall(text)[:_MAX_STARTS]:
        try:
            return json.loads(block)
        except _ERRORS:
            continue
    decoder = json.JSONDecoder()
    for tries, match in enumerate(re.finditer(r"[{\[]", text)):
        if tries == _MAX_STARTS:
            break
        try:
            value, _ = decoder.raw_decode(text, match.start())
            return value
        except _ERRORS:
            continue
    raise ValueError("the reply held no JSON")


def salvage(text: str, key: str) -> list[Any]:
    """The whole items at the start of a damaged `key` list (or bare list): a reply cut
    short by the model's token limit, or spoilt by one unreadable item, keeps the items
    before the damage."""
    text = text.strip().lstrip("\ufeff")
    found = re.search(rf'"{re.escape(key)}"\s*:\s*\[', text)
    if found:
        at = found.end()
    elif text.startswith("["):
        at = 1
    else:
        return []
    decoder = json.JSONDecoder()
    items: list[Any] = []
    while True:
        at = _skip_space(text, at)
        try:
            value, at = decoder.raw_decode(text, at)
        except _ERRORS:
            return items
        items.append(value)
        at = _skip_space(text, at)
        if not text.startswith(",", at):
            return items
        at += 1


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def safe_text(value: str) -> str:
    """`value` without control characters or lone surrogates (each becomes a space)."""
    return _UNSAFE.sub(" ", value)


def _safe_item(item: Any) -> Any:
    if isinstance(item, dict):
        return {k: safe_text(v) if isinstance(v, str) else v for k, v in item.items()}
    return item


def _why_dropped(error: Any) -> str:
    """Why an item failed `model`, from its first error (a pydantic ErrorDetails): in words
    that quote nothing of it, as a turn shows them."""
    where, kind = ".".join(str(p) for p in error["loc"]), error["type"]
    if not where or kind in ("model_type", "model_attributes_type", "dict_type"):
        return "not an object"
    if kind in ("missing", "string_too_short") or error.get("input") is None:
        return f"no {where}"
    if kind == "string_type":
        return f"{where} is not a string"
    if kind == "string_too_long":
        return f"{where} is longer than {error['ctx']['max_length']} characters"
    msg = str(error["msg"])
    return f"{where}: {msg[:1].lower()}{msg[1:]}"


def _unwrapped(value: list[Any], problems: list[str]) -> list[Any]:
    """The list with each item that is a list of objects read as those objects (a reply that
    wrapped its items once more)."""
    out: list[Any] = []
    for index, item in enumerate(value):
        if isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
            problems.append(f"item {index} was a list: its {len(item)} object(s) read as items")
            out += item
        else:
            out.append(item)
    return out


def parse_items(raw: str, key: str, model: type[M], *, limit: int, unwrap: bool = False) -> Parsed[M]:
    """Items of `model` under `key` (or a bare list), at most `limit` of them. `unwrap`: an
    item that is a list of objects is read as those objects, and one object under `key` as a
    list of one."""
    out: Parsed[M] = Parsed()
    try:
        value, unreadable = find_json(raw), None
    except _ERRORS as exc:
        value, unreadable = None, exc
    if not (isinstance(value, list) or (isinstance(value, dict) and key in value)):
        # cut short, or spoilt part way: what was found is at best one item of the list
        if kept := salvage(raw, key):
            out.problems.append(f"damaged reply: kept the {len(kept)} whole item(s) before the damage")
            out.dropped[DAMAGED] += 1  # how many items the damage cost is not known: at least one
            value = kept
        elif unreadable is not None:
            out.problems.append(f"unreadable reply: {unreadable}")
            out.unreadable = True
            return out
    if isinstance(value, dict):
        if key not in value:
            out.problems.append(f"reply has no {key!r} list")
            out.unreadable = True
            return out
        value = value[key]
    if unwrap and isinstance(value, dict):  # one object where a list of them was due
        out.problems.append(f"{key!r} is one object, not a list: read as a list of one")
        value = [value]
    if not isinstance(value, list):
        out.problems.append(f"{key!r} is {type(value).__name__}, not a list")
        out.unreadable = True
        return out
    if unwrap:
        value = _unwrapped(value, out.problems)
    if len(value) > limit:
        out.problems.append(f"{len(value) - limit} of {len(value)} items over the limit of {limit} dropped")
        out.dropped[f"over the limit of {limit} items"] += len(value) - limit
        value = value[:limit]
    for index, item in enumerate(value):
        try:
            out.items.append(model.model_validate(_safe_item(item)))
            out.places.append(index)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "item"
            out.problems.append(f"item {index} dropped: {where}: {first['msg']}")
            out.dropped[_why_dropped(first)] += 1
    return out
