"""The access log names what was asked for, never what a person typed into it.

A query string holds what people type: the subject of an erasure they are looking
for (`/v1/erasures/about?q=…`, the page's `/erase/about?q=…`), their searches. uvicorn
logs each request's path with its query string; this filter drops the query string
(`/v1/erasures/about?…`: a parameter's name may be typed text too), so no log line holds
it. Every
server mnemo starts (`mnemo serve`, the tests' live server, the benchmarks) gets it
through `uvicorn_options` (serving.py).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import uvicorn.config

HIDDEN = "…"


def without_values(path: str) -> str:
    """The path with its query string, if any, replaced by HIDDEN."""
    base, mark, _ = path.partition("?")
    return f"{base}?{HIDDEN}" if mark else path


class WithoutQueryValues(logging.Filter):
    """uvicorn's access records are (client, method, path with query, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], without_values(args[2]), args[3], args[4])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's own logging configuration, with the filter on its access logger."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config.setdefault("filters", {})["without_query_values"] = {"()": WithoutQueryValues}
    config["loggers"]["uvicorn.access"]["filters"] = ["without_query_values"]
    return config
