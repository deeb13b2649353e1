"""The comments that explain each field of a class in its source: what settings.py says of a
setting, without repeating it as a description that could come to say otherwise."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize


def field_comments(cls: type) -> dict[str, str]:
    """Each annotated field of `cls` that has comments: those on the lines right above it, then
    those on its own lines, as one paragraph."""
    source = inspect.getsource(inspect.getmodule(cls))  # type: ignore[arg-type]
    comments: dict[int, tuple[str, bool]] = {}  # line -> (text, alone on its line)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = token.string.removeprefix("#").strip()
            if not text.startswith(("type:", "noqa")):
                comments[token.start[0]] = (text, not token.line[: token.start[1]].strip())
    found = {}
    for statement in _class(ast.parse(source), cls.__qualname__).body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        above: list[str] = []
        line = statement.lineno - 1
        while line in comments and comments[line][1]:
            above.insert(0, comments[line][0])
            line -= 1
        end = statement.end_lineno or statement.lineno
        own = [comments[n][0] for n in range(statement.lineno, end + 1) if n in comments]
        if above or own:
            found[statement.target.id] = " ".join(above + own)
    return found


def _class(module: ast.Module, qualname: str) -> ast.ClassDef:
    scope: list[ast.stmt] = module.body
    for name in qualname.split("."):
        node = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == name)
        scope = node.body
    return node
