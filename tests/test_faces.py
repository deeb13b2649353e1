"""The faces stand side by side over one core: none imports another, and none reaches past Memory.

The faces (the HTTP API, the chat proxy, the web page, the MCP tools) share
only the modules below them (domain, memory, accounts, auth, http, …); the
composition root, mnemo/app.py, is the one module that mounts them all and
connects them. Read from the source with `ast`, so that an import anywhere (in
a function, under TYPE_CHECKING) counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mnemo

SRC = Path(mnemo.__file__).parent
FACES = ("server", "web", "mcp", "proxy", "client")


def _modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(), str(path))


def _imports(name: str, path: Path, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of the module, relative ones made absolute."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *filter(None, [node.module])])
            # `from . import web` names a module too
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _face(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "mnemo" and parts[1] in FACES else None


def test_no_face_imports_another():
    seen, crossings = set(), []
    for name, path, tree in _modules():
        face = _face(name)
        seen.add(face)
        for line, imported in _imports(name, path, tree):
            other = _face(imported)
            if face and other and other != face:
                crossings.append(f"{path.relative_to(SRC.parent)}:{line} imports {imported}")
    assert seen >= set(FACES), "a face package is missing: update FACES"
    assert crossings == [], "a face imports another face:\n" + "\n".join(crossings)


def test_nothing_outside_memory_reaches_into_its_store_or_writer():
    """Memory's own parts are its own: the batch services are handed the store and the writer
    by mnemo.build instead."""
    reaching = []
    for name, path, tree in _modules():
        if name in ("mnemo.memory",) or name.startswith("mnemo.store"):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr in ("store", "writer")):
                continue
            owner = node.value
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
            if owner_name in ("memory", "_memory"):
                reaching.append(f"{path.relative_to(SRC.parent)}:{node.lineno}")
    assert reaching == [], "reaches into Memory's store or writer:\n" + "\n".join(reaching)


def test_the_client_talks_http_only():
    """mnemo.client reads the API's shapes and nothing else of mnemo: no core, no store."""
    allowed = ("mnemo.client", "mnemo.schemas", "mnemo.shapes", "mnemo.domain")
    reaching = [
        f"{path.relative_to(SRC.parent)}:{line} imports {imported}"
        for name, path, tree in _modules()
        if name.startswith("mnemo.client")
        for line, imported in _imports(name, path, tree)
        if imported.startswith("mnemo") and not imported.startswith(allowed)
    ]
    assert reaching == [], "the client reaches past HTTP:\n" + "\n".join(reaching)
