"""The few pieces of Markdown the reference pages are made of: tables, code, escaped prose."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Outside code spans these would start emphasis or an HTML tag; an underscore only at a word's
# edge (GitHub's Markdown leaves MNEMO_USER's alone). A table escapes its cells' pipes itself.
_SPECIAL = re.compile(r"[\\*<>]|(?<![0-9A-Za-z_])_+|_+(?![0-9A-Za-z_])")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def escape(text: str) -> str:
    """`text` as Markdown prose that shows as written, its `code spans` left as they are."""
    parts, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        parts += [_SPECIAL.sub(_escaped, text[at : span.start()]), span.group()]
        at = span.end()
    return "".join([*parts, _SPECIAL.sub(_escaped, text[at:])])


def _escaped(match: re.Match[str]) -> str:
    return "".join("\\" + c for c in match.group())


def code(text: str) -> str:
    """`text` as a code span (fenced with more backticks than it holds)."""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def paragraphs(text: str | None) -> list[str]:
    """The paragraphs of a docstring or help text, each on one line."""
    if not text:
        return []
    blocks = re.split(r"\n\s*\n", text.strip())
    return [" ".join(line.strip() for line in block.splitlines()) for block in blocks if block.strip()]


def first_paragraph(text: str | None) -> str:
    return next(iter(paragraphs(text)), "")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table whose cells are Markdown already; a pipe in a cell (code spans too) is escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("\n", " ").replace("|", r"\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


def number_range(
    low: float | None, high: float | None, low_open: bool = False, high_open: bool = False
) -> str:
    """A range as Click's help writes it: `1<=x<=1000`, `x>0`, `x<=5`; empty for none."""
    if low is None and high is None:
        return ""
    if high is None:
        return f"x{'>' if low_open else '>='}{low}"
    left = "" if low is None else f"{low}{'<' if low_open else '<='}"
    return f"{left}x{'<' if high_open else '<='}{high}"
