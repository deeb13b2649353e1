"""The multilingual recall test set, bench/data/multilingual.jsonl, read and checked.

One synthetic person's life as 120 fact templates, each written in seven
languages (`LANGUAGES`); 60 of them also carry the question the person would
later ask about that fact, in the same seven languages. Each language is one
person's store of 120 facts; a template's question in any language has that
template's fact as its one right answer, in its own language or another.
bench/data/README.md describes the file.

`load()` returns the templates in file order and raises `DataError`, naming
the line and the template, on a file that breaks the schema: not JSON, a field
missing or unknown, a language missing or unknown, a text empty, an id twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

LANGUAGES = ("en", "de", "es", "fr", "pt", "ja", "ru")
DEFAULT = Path(__file__).parent / "data" / "multilingual.jsonl"
FIELDS = ("id", "topic", "facts", "questions")


class DataError(ValueError):
    """The test-set file does not hold to its schema."""


@dataclass(frozen=True)
class Template:
    id: str
    topic: str
    facts: Mapping[str, str]  # language -> the fact, first person
    questions: Mapping[str, str] | None  # language -> the question; None for a distractor


def load(path: Path | str = DEFAULT) -> list[Template]:
    """Every template of the file, in order; `DataError` on the first thing wrong."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    templates: list[Template] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        template = _template(line, f"{path}:{number}")
        if template.id in seen:
            raise DataError(f"{path}:{number}: template {template.id}: the id is used twice")
        seen.add(template.id)
        templates.append(template)
    if not templates:
        raise DataError(f"{path}: no templates")
    return templates


def _template(line: str, where: str) -> Template:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not JSON ({e.msg})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{where}: not a JSON object")
    ident = raw.get("id")
    if not isinstance(ident, str) or not ident.strip():
        raise DataError(f"{where}: no id (a non-empty string)")
    where = f"{where}: template {ident}"
    missing = [f for f in FIELDS if f not in raw]
    unknown = sorted(set(raw) - set(FIELDS))
    if missing or unknown:
        raise DataError(f"{where}: fields missing {missing}, unknown {unknown}")
    if not _text(raw["topic"]):
        raise DataError(f"{where}: no topic (a non-empty string)")
    questions = raw["questions"]
    return Template(
        id=ident,
        topic=raw["topic"],
        facts=_texts(raw["facts"], f"{where}: facts"),
        questions=None if questions is None else _texts(questions, f"{where}: questions"),
    )


def _texts(raw: Any, where: str) -> Mapping[str, str]:
    """A text per language, every language there and nothing else."""
    if not isinstance(raw, dict):
        raise DataError(f"{where}: not an object of language -> text")
    missing = [lang for lang in LANGUAGES if lang not in raw]
    unknown = sorted(set(raw) - set(LANGUAGES))
    if missing or unknown:
        raise DataError(f"{where}: languages missing {missing}, unknown {unknown}")
    empty = [lang for lang in LANGUAGES if not _text(raw[lang])]
    if empty:
        raise DataError(f"{where}: no text (a non-empty string) in {empty}")
    return MappingProxyType({lang: raw[lang] for lang in LANGUAGES})


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
