"""The recipes of docs/connect.md and docs/scaling.md, read from the markdown itself.

A recipe is a fenced code block right after an HTML comment that names it
(`<!-- recipe: ollama -->`): the tests run what the block says, so the docs
cannot drift from what mnemo does. This module holds no tests.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
KEY = "<your mnemo key>"  # the placeholder every recipe uses for a person's key

_RECIPE = re.compile(r"<!-- recipe: ([\w.-]+) -->\n```(\w*)\n(.*?)\n```", re.DOTALL)


def snippets(path: Path = DOCS / "connect.md") -> Iterator[tuple[str, str, str]]:
    """(recipe name, language, text) of every marked block, in the file's order."""
    for found in _RECIPE.finditer(path.read_text(encoding="utf-8")):
        yield found.group(1), found.group(2), found.group(3)


def recipe(name: str, path: Path = DOCS / "connect.md") -> tuple[str, str]:
    """One recipe's (language, text); exactly one block carries the name."""
    found = [(language, text) for n, language, text in snippets(path) if n == name]
    assert len(found) == 1, f"{path.name} has {len(found)} recipes named {name!r}"
    return found[0]


def exports(text: str) -> tuple[dict[str, str], list[list[str]]]:
    """A shell recipe's `export NAME=value` lines as an environment, and its other lines as
    commands (each split as the shell would)."""
    env: dict[str, str] = {}
    commands = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            env[name] = value
        elif words:
            commands.append(words)
    return env, commands


def dotenv(text: str) -> dict[str, str]:
    """`NAME=value` lines, as Docker's env files take them (no quoting, `#` comments)."""
    pairs = (line.partition("=") for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {name.strip(): value for name, _, value in pairs}
