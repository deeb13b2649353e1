"""Reading mnemo's own prompts back, for a bench's scripted model (tests/fakes/openai_server.py):
which prompt a request is, what the user said, what the reconciler is shown."""

from __future__ import annotations

import re

from mnemo.write import extract_prompt, reconcile_prompt


def asked(body: dict) -> tuple[str | None, str]:
    """("extract" or "reconcile" or None, the request's last message)."""
    messages = body.get("messages") or []
    system, user = messages[0]["content"], messages[-1]["content"]
    kind = {extract_prompt.SYSTEM: "extract", reconcile_prompt.SYSTEM: "reconcile"}.get(system)
    return kind, user


def first_said(user: str) -> str | None:
    """The first user message of an extraction request."""
    said = re.search(r"^\[(\d+)\] User: (.*)$", user, re.MULTILINE)
    return said.group(2) if said else None


def shown(user: str) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Of a reconciliation request: the existing facts' texts with their numbers, and the new
    facts' numbers with their texts."""
    existing = {
        m.group(2): int(m.group(1))
        for m in re.finditer(r"^(\d+)\. (.*) \(since \d{4}-\d{2}-\d{2}\)$", user, re.MULTILINE)
    }
    new = [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^N(\d+)\. (.*)$", user, re.MULTILINE)]
    return existing, new
