"""The HTTP API's page: the routes of the OpenAPI document `mnemo serve` publishes, by tag."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from ..app import create_app
from ..settings import Settings
from .markdown import code, escape, first_paragraph, table

METHODS = ("get", "head", "post", "put", "patch", "delete", "options", "trace")
UNTAGGED = "other"


class _Defaults(Settings):
    """Settings from their defaults alone: this process's MNEMO_* variables change nothing."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def openapi() -> tuple[dict[str, Any], str | None]:
    """mnemo's OpenAPI document, and the path that serves it. Building the app opens, starts and
    writes nothing (that waits for its lifespan); the data directory is an empty one all the same."""
    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(_Defaults(data_dir=Path(data_dir)))
        return app.openapi(), app.openapi_url


def render(document: dict[str, Any] | None = None, served_at: str | None = None) -> str:
    """The page for `document` (mnemo's own when not given)."""
    if document is None:
        document, served_at = openapi()
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = defaultdict(list)
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if (operation := item.get(method)) is not None:
                for tag in operation.get("tags") or [UNTAGGED]:
                    by_tag[tag].append((path, method, operation))
    info = document.get("info", {})
    parts = [f"# {escape(info.get('title', 'HTTP'))} HTTP API"]
    if summary := info.get("summary") or first_paragraph(info.get("description")):
        parts.append(escape(summary))
    where = f" is served at {code(served_at)}" if served_at else ""
    parts.append(
        f"Each route of the OpenAPI document, by tag. The document itself{where}, with every"
        " route's parameters, bodies and answers."
    )
    for tag in sorted(by_tag):
        rows = [
            [method.upper(), code(path), _what(operation)]
            for path, method, operation in sorted(by_tag[tag], key=lambda r: (r[0], METHODS.index(r[1])))
        ]
        parts += [f"## {escape(tag)}", table(["Method", "Path", "What it does"], rows)]
    return "\n\n".join(parts)


def _what(operation: dict[str, Any]) -> str:
    text = escape(first_paragraph(operation.get("description")) or operation.get("summary", ""))
    return text + (" (deprecated)" if operation.get("deprecated") else "")
