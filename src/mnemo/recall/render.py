"""The memory block shown to the model, and where it goes in the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from string import Template
from typing import Any

from .fuse import Hit

DEFAULT_TEMPLATE = Template(
    "Here is what your memory holds about me that may matter for this reply"
    " (dated when each was last confirmed). Use what helps; ignore the rest.\n"
    "<memories>\n$facts\n</memories>"
)


def render(hits: Sequence[Hit], template: Template = DEFAULT_TEMPLATE) -> str | None:
    """A dated list, or None when nothing was recalled."""
    if not hits:
        return None
    lines = []
    for hit in hits:
        seen = hit.fact.last_seen_at or hit.fact.created_at
        lines.append(f"- [{seen:%Y-%m-%d}] {hit.fact.text}")
    return template.substitute(facts="\n".join(lines))


def inject(messages: Sequence[dict[str, Any]], block: str | None) -> list[dict[str, Any]]:
    """Place the block just before the latest user message.

    Everything before it — the system prompt and earlier turns — stays byte for
    byte the same from turn to turn, so providers' prompt caches keep working.
    """
    messages = list(messages)
    if not block:
        return messages
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    at = len(messages) if last_user is None else last_user
    return [*messages[:at], {"role": "user", "content": block}, *messages[at:]]
