"""The access log names what was asked for, never what a person typed into it.

A query string holds what people type: the subject of an erasure they are looking
for (`/v1/erasures/about?q=…`, the page's `/erase/about?q=…`), their searches; so may a
path (a conversation id the client chose, `/conversations/{id}/erase`, or any path that
finds nothing). uvicorn logs each request's path with its query string; this filter drops
the query string (`/v1/erasures/about?…`: a parameter's name may be typed text too) and
shows of the path only the words of the app's own routes and ids of mnemo's shape (a
UUID), every other segment as HIDDEN (`/conversations/…/erase`), so no log line holds
typed text. Every server mnemo starts (`mnemo serve`, the tests' live server, the
benchmarks) gets it through `uvicorn_options` (serving.py); `create_app` names its routes.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

import uvicorn.config

from .. import logs

HIDDEN = "…"
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_SHOWN: set[str] = set()  # the literal segments of the routes of every app this process serves


def name_routes(paths: Iterable[str]) -> None:
    """The route paths ("/v1/memories/{fact_id}/history") whose literal words the log shows."""
    for path in paths:
        _SHOWN.update(s for s in path.split("/") if s and "{" not in s)


def route_paths(routes: Iterable[Any]) -> Iterator[str]:
    """The paths of `routes` (an app's), those of included routers' routes too."""
    for route in routes:
        if isinstance(path := getattr(route, "path", None), str):
            yield path
        yield from route_paths(getattr(getattr(route, "original_router", None), "routes", ()))


def without_values(path: str) -> str:
    """The path with its query string, if any, replaced by HIDDEN, and each segment that is
    neither a word of a route nor an id replaced by HIDDEN."""
    base, mark, _ = path.partition("?")
    shown = "/".join(s if not s or s in _SHOWN or _ID.fullmatch(s) else HIDDEN for s in base.split("/"))
    return f"{shown}?{HIDDEN}" if mark else shown


class WithoutQueryValues(logging.Filter):
    """uvicorn's access records are (client, method, path with query, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], without_values(args[2]), args[3], args[4])
        return True


def log_config(json: bool = False) -> dict[str, Any]:
    """uvicorn's own logging configuration, with the filter on its access logger; `json`: each
    line one JSON object (mnemo.logs)."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    if json:
        config["formatters"] = {"default": logs.JSON_FORMATTER, "access": logs.JSON_FORMATTER}
    config.setdefault("filters", {})["without_query_values"] = {"()": WithoutQueryValues}
    config["loggers"]["uvicorn.access"]["filters"] = ["without_query_values"]
    # what an administrator did (web/admin.py): to the server's log like uvicorn's own lines
    config["loggers"]["mnemo.admin"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
