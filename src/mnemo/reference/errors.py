"""The errors page: every stable code an answer may carry, read from mnemo's own kinds of error
(each with its `code` and docstring) and from the refusals answered by HTTP status alone."""

from __future__ import annotations

import inspect

from ..batch.backfill import NoModel
from ..batch.transfer.report import ImportRefused
from ..domain import MnemoError
from ..http.errors import HTTP_CODES, status_of
from ..mcp.tools import MemoryOff
from ..providers.base import ModelError
from .markdown import code, escape, table

# kinds defined beside what raises them (also among MnemoError's subclasses once imported)
_ELSEWHERE = (NoModel, ImportRefused, MemoryOff)


def render() -> str:
    found = {*_kinds(MnemoError), *_kinds(ModelError), *_ELSEWHERE}
    # a kind without a code of its own answers with its parent's
    kinds = sorted((str(vars(k)["code"]), k) for k in found if "code" in vars(k))
    rows = [[code(name), str(status_of(k) or "—"), escape(_summary(k))] for name, k in kinds]
    http_rows = [
        [code(name), str(status), escape(meaning)] for status, (name, meaning) in sorted(HTTP_CODES.items())
    ]
    return "\n\n".join(
        [
            "# Errors",
            "Every error answer carries a `code` that stays the same whatever its wording: the HTTP"
            ' API\'s body `{"error": {"message": …, "code": …}}` (and `problems` on 422, where and what),'
            " the Python client's exception (`exc.code`), an MCP tool's error (its result's"
            " `_meta`, under `mnemo/code`) and the command line's message, which it opens"
            " (`not_found: No memory with id …`, on standard error; exit 2 for the codes HTTP answers"
            " 422, a request that cannot be applied as given, and 1 for every other). The chat proxy"
            " answers in OpenAI's own error"
            " shape; a command line the CLI cannot read (an unknown option, a malformed date) is"
            " answered with its usage and exit 2.",
            "## mnemo's errors",
            "A kind that is no HTTP answer (—) is said by the command line, MCP or an import.",
            table(["Code", "HTTP", "Meaning"], rows),
            "## Refusals by HTTP status",
            "Answers that are no error of mnemo's own carry the code of their status.",
            table(["Code", "HTTP", "Meaning"], http_rows),
        ]
    )


def _kinds(base: type) -> list[type]:
    subclasses: list[type] = base.__subclasses__()
    return [base, *(k for sub in subclasses for k in _kinds(sub))]


def _summary(kind: type) -> str:
    """The first paragraph of the kind's docstring, on one line."""
    doc = inspect.getdoc(kind) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())
