"""docs/architecture.md's table "What each package may import", checked against the source: the
table is read from the markdown itself, and every import of every module (read with `ast`, so an
import inside a function counts too) must be one its package's row allows. A row names only
packages of rows above it (the table lists the layers from the bottom up), so the layers cannot
loop; an import for types only (under TYPE_CHECKING) may name any package of a lower row."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import mnemo

SRC = Path(mnemo.__file__).parent
DOC = SRC.parents[1] / "docs" / "architecture.md"
EVERYTHING_BELOW = "everything below"
NOTHING = "nothing of mnemo"


def layers() -> list[tuple[list[str], set[str] | None]]:
    """The table's rows, bottom up: (the packages of the row, what they may import; None:
    every package of a lower row)."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("## What each package may import", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        packages = re.findall(r"`([a-z_]+)`", re.sub(r"\([^)]*\)", "", cells[0]))  # not the notes
        if cells[1] == EVERYTHING_BELOW:
            rows.append((packages, None))
        else:
            allowed = set(re.findall(r"`([a-z_]+)`", cells[1]))
            assert allowed or cells[1] == NOTHING, (
                f"a row of the table says neither names nor {NOTHING!r}: {line}"
            )
            rows.append((packages, allowed))
    return rows


def _package(path: Path) -> str:
    """The package of mnemo a file belongs to: `store` for store/sql/facts.py, `mnemo` for the
    package's own __init__."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return "mnemo" if parts == ("__init__",) else parts[0]


def _imports(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, package of mnemo imported, for types only) for each import of another package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    dotted = path.relative_to(SRC.parent).with_suffix("").parts
    package = list(dotted if path.name == "__init__.py" else dotted[:-1])
    if path.name == "__init__.py":
        package = package[:-1] if package[-1] == "__init__" else package
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *filter(None, [node.module])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            parts = name.split(".")
            if parts[0] == "mnemo" and len(parts) > 1 and _is_package(parts[1]):
                yield node.lineno, parts[1], id(node) in typing_only


def _is_package(name: str) -> bool:
    return (SRC / name).is_dir() or (SRC / f"{name}.py").is_file()


def test_the_table_names_every_package_once_and_only_lower_layers():
    rows = layers()
    named = [p for packages, _ in rows for p in packages]
    assert len(named) == len(set(named)), "a package has two rows"
    real = {_package(path) for path in SRC.rglob("*.py")}
    assert set(named) == real, (
        f"not in the table: {sorted(real - set(named))}; gone: {sorted(set(named) - real)}"
    )
    below: set[str] = set()
    for packages, allowed in rows:
        upward = (allowed or set()) - below
        assert not upward, f"{packages} may import {sorted(upward)}, which is not a lower row"
        below |= set(packages)


def test_every_import_is_one_the_table_allows():
    rows = layers()
    row_of = {p: i for i, (packages, _) in enumerate(rows) for p in packages}
    crossings = []
    for path in sorted(SRC.rglob("*.py")):
        mine = _package(path)
        allowed = rows[row_of[mine]][1]
        for line, imported, for_types in _imports(path):
            if imported == mine:
                continue
            lower = row_of[imported] < row_of[mine]
            if not (lower if allowed is None or for_types else imported in allowed):
                crossings.append(f"{path.relative_to(SRC.parent)}:{line} imports mnemo.{imported}")
    assert crossings == [], (
        "imports docs/architecture.md's table does not allow (change the code, or the table):\n"
        + "\n".join(crossings)
    )
