"""How mnemo's processes write their log: lines of text, or one JSON object a line for a log
collector (MNEMO_LOG_FORMAT=json, or `--json` on `mnemo serve`, `mnemo worker`, `mnemo mcp`).

A JSON line holds `time` (ISO 8601, UTC), `level`, `logger` and `message`, and what a record
carries besides. Nothing else changes: the same records, the same filters (the access log's
hidden values, no stored text in any line).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

JSON_FORMATTER: dict[str, Any] = {"()": "mnemo.logs.json_formatter"}  # for logging.config


def json_formatter() -> logging.Formatter:
    from pythonjsonlogger.core import RESERVED_ATTRS
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        datefmt="%Y-%m-%dT%H:%M:%S%z",
        # uvicorn's records carry their message again with terminal colours: left out
        reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        json_ensure_ascii=False,
    )


def to_stderr(prefix: str, *, json: bool, level: int = logging.WARNING) -> None:
    """This process's log to standard error: `prefix: message` lines, or JSON lines; mnemo's
    own records from `level` on, other libraries' warnings and errors only."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_formatter() if json else logging.Formatter(f"{prefix}: %(message)s"))
    logging.basicConfig(handlers=[handler], level=logging.WARNING, force=True)
    logging.getLogger("mnemo").setLevel(level)
