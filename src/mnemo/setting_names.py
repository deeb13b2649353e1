"""Names that look like settings but are none: MNEMO_* variables and TOML keys nothing reads.

pydantic-settings ignores them, so a misspelt `MNEMO_LLM_MODLE` would leave the
model unset without a word; `Settings.load` refuses them instead, and `mnemo
doctor` lists them, each with the nearest name that is a setting.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, get_origin

from pydantic import BaseModel

PREFIX = "MNEMO_"
DELIMITER = "__"  # a nested setting in the environment: MNEMO_RECALL__MAX_FACTS
# MNEMO_* variables that are read, but not as settings: the test suite's own, and the
# HTTP client's (mnemo.client: where the server is, and the key to use)
NOT_SETTINGS = ("MNEMO_TEST_", "MNEMO_LONG_TESTS", "MNEMO_SKIP_CONTAINER_TESTS", "MNEMO_CITUS_SOURCE")
CLIENT_VARIABLES = frozenset({"MNEMO_URL", "MNEMO_API_KEY"})


@dataclass(frozen=True)
class UnknownSetting:
    name: str  # as given: MNEMO_LLM_MODLE, or recall.max_fact in a TOML file
    source: str  # "environment", or the TOML file's path
    nearest: str | None  # the closest name that is a setting, if any is close

    def __str__(self) -> str:
        hint = f"; did you mean {self.nearest}?" if self.nearest else ""
        return f"{self.name} ({self.source}) is not a setting{hint}"


def unknown_settings(
    model: type[BaseModel],
    environ: Mapping[str, str],
    toml: Mapping[str, Any] | None = None,
    toml_source: str = "TOML file",
) -> list[UnknownSetting]:
    """The MNEMO_* variables of `environ` and the keys of the `toml` table that `model` lacks."""
    paths = dict(_paths(model))  # ("recall", "max_facts") -> kind: "model", "dict" or "value"
    unknown = [_unknown_variable(name, paths) for name in sorted(environ) if _is_setting_variable(name)]
    if toml:
        unknown += _unknown_keys(toml, (), (), paths, toml_source)
    return [u for u in unknown if u is not None]


def _is_setting_variable(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(PREFIX) and not upper.startswith(NOT_SETTINGS) and upper not in CLIENT_VARIABLES


def _paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    for name, field in model.model_fields.items():
        path, kind = (*prefix, name), field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield path, "model"
            yield from _paths(kind, path)
        else:
            yield path, "dict" if get_origin(kind) is dict else "value"


def _variable(path: tuple[str, ...]) -> str:
    return PREFIX + DELIMITER.join(path).upper()


def _unknown_variable(name: str, paths: dict[tuple[str, ...], str]) -> UnknownSetting | None:
    upper = name.upper()
    names = {_variable(path): kind for path, kind in paths.items()}
    # the keys of a dict setting are the person's own: MNEMO_RECALL__WEIGHTS__SEMANTIC
    dicts = [variable + DELIMITER for variable, kind in names.items() if kind == "dict"]
    if upper in names or upper.startswith(tuple(dicts)):
        return None
    return UnknownSetting(name, "environment", _nearest(upper, names))


def _unknown_keys(
    table: Mapping[str, Any],
    prefix: tuple[str, ...],
    written: tuple[str, ...],
    paths: dict[tuple[str, ...], str],
    source: str,
) -> Iterator[UnknownSetting | None]:
    """`prefix`: the path of `table` as a setting's, `written`: as the file writes it."""
    for key, value in table.items():
        # top-level keys match their field whatever their case, a table's keys only as written
        path = (*prefix, key if prefix else key.lower())
        kind = paths.get(path)
        if kind is None:
            dotted = {".".join(p): k for p, k in paths.items() if len(p) == len(path)}
            yield UnknownSetting(".".join((*written, key)), source, _nearest(".".join(path), dotted))
        elif kind == "model" and isinstance(value, Mapping):
            yield from _unknown_keys(value, path, (*written, key), paths, source)


def _nearest(name: str, names: Mapping[str, str]) -> str | None:
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return close[0] if close else None
