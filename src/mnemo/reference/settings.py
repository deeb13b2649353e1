"""The settings page: every field of mnemo.settings.Settings as its environment variable, with
its type, its default and what the comments beside it in settings.py say (a field's
`description`, where one is given, instead). A secret's default is never shown."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from ..settings import MODEL_FLOORS, Settings
from .comments import field_comments
from .markdown import code, escape, number_range, paragraphs, table

# a field whose name holds one of these is a secret: its default is never printed
SECRET_WORDS = ("key", "secret", "password")
# floors that another embedding model brings: model -> section -> field -> value
Floors = Mapping[str, Mapping[str, Mapping[str, float]]]


def render(model: type[BaseSettings] = Settings, floors: Floors = MODEL_FLOORS) -> str:
    """The page for `model` (mnemo's Settings when not given), with `floors` beside the defaults."""
    prefix = model.model_config.get("env_prefix", "")
    delimiter = model.model_config.get("env_nested_delimiter")
    if not delimiter:
        raise ValueError(f"{model.__name__} has no env_nested_delimiter: its sections have no variables")
    sections = list(_sections(model, ()))
    example = next(
        (_variable(prefix, delimiter, path, next(iter(cls.model_fields))) for path, cls in sections if path),
        "",
    )
    parts = [
        "# Settings",
        "Each setting is read from its environment variable, else from the TOML file that `--config`"
        " names, else its default (a command's own option for it comes first). A setting of a section"
        f" is `{prefix}<SECTION>{delimiter}<NAME>` in the environment (`{example}`) and `<name>` under"
        " `[<section>]` in the TOML file; a name that is no setting is refused (`mnemo doctor` names"
        " the nearest one).",
    ]
    for path, cls in sections:
        comments = field_comments(cls)
        section_floors = {embedder: f.get(".".join(path), {}) for embedder, f in floors.items()}
        rows = [
            _row(_variable(prefix, delimiter, path, name), delimiter, name, field, comments, section_floors)
            for name, field in cls.model_fields.items()
            if not _section_type(field)
        ]
        parts.append("## " + (code(f"[{'.'.join(path)}]") if path else "General"))
        if path:  # the top's docstring is the code's, its sections' are the page's
            parts += map(escape, paragraphs(cls.__dict__.get("__doc__")))
        parts.append(table(["Variable", "Type", "Default", "Meaning"], rows))
    return "\n\n".join(parts)


def _variable(prefix: str, delimiter: str, path: tuple[str, ...], name: str) -> str:
    return (prefix + delimiter.join((*path, name))).upper()


def _sections(
    cls: type[BaseModel], path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], type[BaseModel]]]:
    """`cls` and each model nested in it, depth first, with their paths from the top."""
    yield path, cls
    for name, field in cls.model_fields.items():
        if nested := _section_type(field):
            yield from _sections(nested, (*path, name))


def _section_type(field: FieldInfo) -> type[BaseModel] | None:
    kind = field.annotation
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _row(
    variable: str,
    delimiter: str,
    name: str,
    field: FieldInfo,
    comments: dict[str, str],
    floors: Mapping[str, Mapping[str, float]],
) -> list[str]:
    kind = _type(field.annotation)
    if limits := _limits(field):
        kind += f", {limits}"
    if get_origin(field.annotation) is dict:
        kind += f" (JSON, or one key: {code(variable + delimiter + '<KEY>')})"
    default = _default(name, field)
    others = [f"{code(model)}: {code(str(f[name]))}" for model, f in sorted(floors.items()) if name in f]
    if others:
        default += f" ({'; '.join(others)})"
    meaning = field.description or comments.get(name, "")
    return [code(variable), kind, default, escape(meaning[:1].upper() + meaning[1:])]


def _type(kind: Any) -> str:
    """The annotation as the page names it: `int`, `str`, `path`, `list[str]`, one of `a`, `b`."""
    choices = _choices(kind)
    if choices:
        return "one of " + ", ".join(code(str(c)) for c in choices)
    return code(_type_name(kind))


def _choices(kind: Any) -> list[Any]:
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return list(args)
    if isinstance(kind, type) and issubclass(kind, Enum):
        return [member.value for member in kind]
    if origin in (Union, types.UnionType):
        return [c for arg in args if arg is not type(None) for c in _choices(arg)]
    return []


def _type_name(kind: Any) -> str:
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args if a is not type(None))
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(map(_type_name, args))}]"
    if kind is Path:
        return "path"
    return getattr(kind, "__name__", str(kind))


def _limits(field: FieldInfo) -> str:
    low: Any = None
    high: Any = None
    low_open = high_open = False
    for bound in field.metadata:
        if isinstance(bound, Ge | Gt):
            low, low_open = (bound.ge, False) if isinstance(bound, Ge) else (bound.gt, True)
        elif isinstance(bound, Le | Lt):
            high, high_open = (bound.le, False) if isinstance(bound, Le) else (bound.lt, True)
    return number_range(low, high, low_open, high_open)


def _default(name: str, field: FieldInfo) -> str:
    if any(word in name.lower() for word in SECRET_WORDS):
        return "unset"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if not isinstance(value, dict | list):
            return "computed"  # such as the data directory: the machine's own
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, dict | list):
        return code(json.dumps(value, sort_keys=True))
    return code(str(value))
