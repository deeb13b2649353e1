"""Other tools' files, read and checked whole: memories from mem0 and Khoj, a Markdown or
plain-text list of facts, and the conversations of a Claude data export.

- `mem0`: what `get_all` returns (or its export): a JSON array of memories, or an object
  with one under `"results"`; each `{id, memory, user_id?, agent_id?, metadata?, categories?,
  created_at?, updated_at?, hash?}`.
- `khoj`: what Khoj's `GET /api/memories` returns: a JSON array of `{id, raw, created_at}`.
- `markdown`: one fact a line or a bullet (`-`, `*`, `+`, `1.`, `1)`), a task box (`[ ]`,
  `[x]`) dropped; headings, rules and blank lines ignored; an indented line after a bullet
  continues it.
- `claude`: a JSON array of conversations `{uuid, name, created_at, chat_messages: [{uuid,
  text, content, sender, created_at}]}`.

Each memory keeps the tool's id in its provenance (`Origin`), with what the tool held that a
fact has no field for.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...domain import Category, InvalidInput, Origin, clean_text, is_unicode
from .formats import (
    ConversationItem,
    FactItem,
    json_document,
    lines,
    source_id,
    storable,
    text_of,
    time_of,
)

# mem0's categories (its defaults, and ours by name) that say what kind of fact it is; the
# others (food, travel, …) are topics, kept in the provenance only
_MEM0_CATEGORIES = {
    "personal_details": Category.IDENTITY,
    "professional_details": Category.IDENTITY,
    "family": Category.RELATIONSHIP,
    "relationships": Category.RELATIONSHIP,
    "user_preferences": Category.PREFERENCE,
    "preferences": Category.PREFERENCE,
    "milestones": Category.EVENT,
    "plans": Category.PLAN,
    "goals": Category.PLAN,
    **{c.value: c for c in Category},
}
_MAX_NAME = 200  # a user or agent name taken from a file


def _records(path: Path, what: str, key: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a JSON array (mem0: or of its `"results"`), each with where it is; a
    repeated id is refused, naming both records."""
    data = json_document(path)
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]
    if not isinstance(data, list):
        raise InvalidInput(f"not a {what} file: expected a JSON array of memories")
    out: list[tuple[str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for number, record in enumerate(data, start=1):
        where = f"record {number}"
        if not isinstance(record, dict) or key not in record:
            raise InvalidInput(f'{where}: expected an object with "{key}"')
        rid = source_id(record.get("id"), where, "id")
        if rid is not None:
            where += f" (id {rid!r})"
            if rid in seen:
                raise InvalidInput(f"{where}: the same id as record {seen[rid]}")
            seen[rid] = number
        out.append((where, record))
    return out


def _fact_text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f'{where}: "{key}" must be text')
    try:
        return clean_text(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None


def _name(value: Any, where: str, key: str) -> str | None:
    """A user's or an agent's name from a file: None when absent or blank."""
    if value is None:
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise InvalidInput(f'{where}: "{key}" must be text')
    name = " ".join(str(value).split())
    if not is_unicode(name) or "\x00" in name or len(name) > _MAX_NAME:
        raise InvalidInput(f'{where}: "{key}" is not a name mnemo can hold')
    return name or None


def mem0_items(path: Path) -> list[FactItem]:
    out = []
    for where, r in _records(path, "mem0", "memory"):
        text = _fact_text(r["memory"], where, "memory")
        categories = r.get("categories")
        if categories is not None and not (
            isinstance(categories, list) and all(isinstance(c, str) for c in categories)
        ):
            raise InvalidInput(f'{where}: "categories" must be a list of names')
        metadata = r.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInput(f'{where}: "metadata" must be an object')
        named = [*(categories or ()), (metadata or {}).get("category")]
        category = next(
            (
                _MEM0_CATEGORIES[c.lower()]
                for c in named
                if isinstance(c, str) and c.lower() in _MEM0_CATEGORIES
            ),
            Category.OTHER,
        )
        updated = time_of(r.get("updated_at"), where)
        details = {
            "user_id": r.get("user_id"),
            "agent_id": r.get("agent_id"),
            "run_id": r.get("run_id"),
            "hash": r.get("hash"),
            "categories": categories,
            "metadata": metadata,
            "updated_at": updated.isoformat() if updated else None,
        }
        kept = {k: v for k, v in details.items() if v not in (None, [], {})}
        storable(kept, where, "a field besides the memory", strings=False)  # masked when stored
        out.append(
            FactItem(
                where,
                text,
                category,
                agent=_name(r.get("agent_id"), where, "agent_id"),
                user=_name(r.get("user_id"), where, "user_id"),
                created_at=time_of(r.get("created_at"), where),
                origin=_origin("mem0", r),
                details=kept,
            )
        )
    return out


def khoj_items(path: Path) -> list[FactItem]:
    return [
        FactItem(
            where,
            _fact_text(r["raw"], where, "raw"),
            created_at=time_of(r.get("created_at"), where),
            origin=_origin("khoj", r),
        )
        for where, r in _records(path, "Khoj", "raw")
    ]


def _origin(tool: str, record: dict[str, Any]) -> Origin:
    rid = record.get("id")
    return Origin(tool, None if rid is None else str(rid))


# -- Markdown and plain text ----------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+(.*))?$")
_BOX = re.compile(r"^\[[ xX]\]\s*")
_HEADING = re.compile(r"^\s*#{1,6}(?:\s.*)?$")
_RULE = re.compile(r"^\s*[-=*_](?:\s*[-=*_]){2,}\s*$")  # a rule, or the line under a heading
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")


def markdown_items(path: Path) -> list[FactItem]:
    items: list[tuple[int, list[str]]] = []  # (line, parts) of each fact
    bullet = False  # whether the fact being read is a bullet (which an indented line continues)
    for number, raw in lines(path):
        line = raw.rstrip("\r\n")
        if _RULE.match(line) and not bullet and items and items[-1][0] == number - 1:
            items.pop()  # a heading underlined with === or ---
        if not line.strip() or _HEADING.match(line) or _RULE.match(line):
            bullet = False
            continue
        found = _BULLET.match(line)
        if found:
            items.append((number, [_BOX.sub("", found.group(1) or "")]))
            bullet = True
        elif bullet and line[:1].isspace():
            items[-1][1].append(line)
        else:
            items.append((number, [line]))
            bullet = False
    out = []
    for number, parts in items:
        where = f"line {number}"
        text = _EMPHASIS.sub(r"\2", " ".join(parts))
        if not text.strip():
            continue  # an empty bullet or task box
        out.append(
            FactItem(
                where, _fact_text(text, where, "text"), origin=Origin("markdown", f"{path.name}:{number}")
            )
        )
    return out


# -- Claude data export ---------------------------------------------------------------------

_SENDERS = {"human": "user", "assistant": "assistant"}


def claude_conversations(path: Path) -> list[ConversationItem]:
    data = json_document(path)
    if not isinstance(data, list):
        raise InvalidInput("not a Claude export: expected a JSON array of conversations")
    out = []
    seen: dict[str, int] = {}
    for number, c in enumerate(data, start=1):
        where = f"conversation {number}"
        if not isinstance(c, dict) or not isinstance(c.get("chat_messages"), list):
            raise InvalidInput(f'{where}: expected an object with "chat_messages"')
        if isinstance(c.get("name"), str) and c["name"]:
            where += f" ({c['name']!r})"
        uuid = source_id(c.get("uuid"), where, "uuid", numbers=False)
        if uuid is not None:
            if uuid in seen:
                raise InvalidInput(f"{where}: the same uuid as conversation {seen[uuid]}")
            seen[uuid] = number
        kept = []
        for i, m in enumerate(c["chat_messages"], start=1):
            at = f"{where}, message {i}"
            if not isinstance(m, dict) or not isinstance(m.get("sender"), str) or m["sender"] not in _SENDERS:
                raise InvalidInput(f'{at}: a message is an object with "sender" human or assistant')
            said = m.get("text")
            if said is not None and not isinstance(said, str):
                raise InvalidInput(f'{at}: "text" must be text')
            text = (said or "").strip() or text_of(m.get("content"), at).strip()
            if text:
                kept.append((_SENDERS[m["sender"]], text_of(text, at), time_of(m.get("created_at"), at)))
        out.append(ConversationItem(where, uuid, time_of(c.get("created_at"), where), tuple(kept)))
    return out
