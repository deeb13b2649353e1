"""Option and argument types shared by the commands."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from .runtime import parse_when

Json = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of a table.")]
FactId = Annotated[
    str,
    typer.Argument(
        metavar="ID", help="The memory's id (see mnemo list), or a unique start of it (8 characters or more)."
    ),
]
AsOf = Annotated[
    datetime | None,
    typer.Option(
        "--as-of",
        parser=parse_when,
        metavar="DATETIME",
        help="Answer as memory stood then: ISO date or date-time, naive = UTC.",
    ),
]
Limit = Annotated[int, typer.Option("--limit", "-n", min=1, max=1_000_000, help="At most this many.")]
Offset = Annotated[int, typer.Option("--offset", min=0, max=1_000_000_000, help="Skip this many.")]
