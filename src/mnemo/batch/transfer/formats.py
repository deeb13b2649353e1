"""The files `mnemo import` reads, parsed and checked whole before anything is written.

- `openai`: JSONL, one conversation a line, in the chat-completions message
  format: `{"messages": [{"role", "content"}, …], "id"?, "conversation_id"?,
  "created"?}` or a bare list of messages.
- `chatgpt`: the `conversations.json` of a ChatGPT data export: a JSON array of
  conversations, each a tree of messages (`mapping`); the branch kept is the
  one that ends at `current_node`.
- `facts`: JSONL, one fact a line: `{"text", "category"?, "valid_from"?,
  "pinned"?, "agent"?}`.
- `mnemo`: what `mnemo export` writes (see restore.py and docs/export-format.md).

Only what a person and their assistant said is kept of a conversation: user
and assistant messages with text; system, developer and tool messages, tool
calls and empty messages are left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from ...domain import Category, InvalidInput, as_utc, clean_text, parse_time


class Format(StrEnum):
    AUTO = "auto"
    MNEMO = "mnemo"
    OPENAI = "openai"
    CHATGPT = "chatgpt"
    FACTS = "facts"


KEPT_ROLES = ("user", "assistant")
_LEFT_OUT_ROLES = ("system", "developer", "tool", "function")


@dataclass(frozen=True)
class ConversationItem:
    """One conversation of a file, before it has a user: where it was, and what was said."""

    where: str  # "line 3", "conversation 2 ('Trip to Porto')": for messages to the person
    source_id: str | None  # the file's own id for it, if any
    created_at: datetime | None
    messages: tuple[tuple[str, str, datetime | None], ...]  # role, content, when (if known)

    def key(self) -> str:
        """What makes it the same conversation on the next import: its id, else its content."""
        if self.source_id:
            return f"id:{self.source_id}"
        said = json.dumps([m[:2] for m in self.messages], ensure_ascii=False, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(said.encode()).hexdigest()


@dataclass(frozen=True)
class FactItem:
    line: int
    text: str
    category: Category
    valid_from: datetime | None
    pinned: bool
    agent: str | None


# -- reading ----------------------------------------------------------------------------


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file, parsed, with its number (from 1)."""
    with path.open(encoding="utf-8-sig") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"line {number}: not JSON ({exc.msg}, column {exc.colno})") from exc


def detect(path: Path) -> Format:
    """The format of a file, from its first character or its first line."""
    with path.open(encoding="utf-8-sig") as f:
        head = f.read(4096).lstrip()
    if not head:
        raise InvalidInput(f"{path} is empty")
    with path.open(encoding="utf-8-sig") as f:
        line = next((text for text in f if text.strip()), "")
    try:
        first = json.loads(line)
    except json.JSONDecodeError:
        if head.startswith("["):  # an array over many lines: a ChatGPT export
            return Format.CHATGPT
        raise InvalidInput(f"cannot tell the format of {path}: its first line is not JSON") from None
    if isinstance(first, list):  # a line of messages, or a ChatGPT export on one line
        chatgpt = bool(first) and all(isinstance(c, dict) and "mapping" in c for c in first)
        return Format.CHATGPT if chatgpt else Format.OPENAI
    if isinstance(first, dict):
        if first.get("type") in ("header", "user") and "format" in first:
            return Format.MNEMO
        if "messages" in first:
            return Format.OPENAI
        if "text" in first:
            return Format.FACTS
    raise InvalidInput(f"cannot tell the format of {path} from its first line; give --format")


def _time(value: Any, where: str) -> datetime | None:
    """A Unix time (seconds) or an ISO date-time; naive means UTC."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, str):
            parsed = parse_time(value)
            return as_utc(parsed) if parsed else None
    except (ValueError, OverflowError, OSError):
        pass
    raise InvalidInput(f"{where}: {value!r} is not a time (Unix seconds or ISO 8601)")


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.replace("\x00", "")  # NUL cannot be stored in PostgreSQL text
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(part.get("text") or ""))
        return "\n".join(p for p in parts if p).replace("\x00", "")
    raise InvalidInput(f"{where}: content must be text or a list of parts, not {type(content).__name__}")


# -- OpenAI chat-completions JSONL --------------------------------------------------------


def openai_conversations(path: Path) -> list[ConversationItem]:
    out = []
    for number, data in json_lines(path):
        where = f"line {number}"
        meta: dict[str, Any] = {}
        if isinstance(data, dict):
            meta, messages = data, data.get("messages")
        else:
            messages = data
        if not isinstance(messages, list):
            raise InvalidInput(f'{where}: expected a list of messages or an object with "messages"')
        kept = []
        for i, m in enumerate(messages, start=1):
            at = f"{where}, message {i}"
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise InvalidInput(f'{at}: a message is an object with a "role"')
            role = m["role"]
            if role not in KEPT_ROLES and role not in _LEFT_OUT_ROLES:
                raise InvalidInput(f"{at}: unknown role {role!r}")
            text = _text(m.get("content"), at).strip()
            if role in KEPT_ROLES and text:
                kept.append((role, text, None))
        source = meta.get("id", meta.get("conversation_id"))
        if source is not None and not isinstance(source, str | int):
            raise InvalidInput(f'{where}: "id" must be text or a number')
        created = _time(meta.get("created", meta.get("created_at")), where)
        out.append(ConversationItem(where, None if source is None else str(source), created, tuple(kept)))
    return out


# -- ChatGPT data export -------------------------------------------------------------------


def chatgpt_conversations(path: Path) -> list[ConversationItem]:
    try:
        with path.open(encoding="utf-8-sig") as f:
            data = json.load(f)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {exc.lineno}: not JSON ({exc.msg}, column {exc.colno})") from exc
    if not isinstance(data, list):
        raise InvalidInput("not a ChatGPT export: expected a JSON array of conversations")
    return [_chatgpt(i, c) for i, c in enumerate(data, start=1)]


def _chatgpt(number: int, c: Any) -> ConversationItem:
    where = f"conversation {number}"
    if not isinstance(c, dict) or not isinstance(c.get("mapping"), dict):
        raise InvalidInput(f'{where}: expected an object with a "mapping" of messages')
    if isinstance(c.get("title"), str):
        where += f" ({c['title']!r})"
    mapping: dict[str, Any] = c["mapping"]
    node_id = c.get("current_node")
    if node_id is None:  # no branch marked: the last leaf
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        node_id = leaves[-1] if leaves else None
    branch = []
    seen = set()
    while node_id is not None:
        node = mapping.get(node_id)
        if not isinstance(node, dict) or node_id in seen:
            raise InvalidInput(f"{where}: node {node_id!r} is missing or in a cycle")
        seen.add(node_id)
        branch.append(node)
        node_id = node.get("parent")
    kept = []
    for node in reversed(branch):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        role = (message.get("author") or {}).get("role")
        content = message.get("content") or {}
        metadata = message.get("metadata") or {}
        if (
            role not in KEPT_ROLES
            or content.get("content_type") not in ("text", "multimodal_text")
            or message.get("recipient", "all") != "all"
            or metadata.get("is_visually_hidden_from_conversation")
        ):
            continue
        text = _text(content.get("parts"), f"{where}, message {message.get('id')}").strip()
        if text:
            kept.append((role, text, _time(message.get("create_time"), where)))
    source = c.get("id", c.get("conversation_id"))
    return ConversationItem(
        where, None if source is None else str(source), _time(c.get("create_time"), where), tuple(kept)
    )


# -- facts JSONL ----------------------------------------------------------------------------


def fact_items(path: Path) -> list[FactItem]:
    out = []
    for number, data in json_lines(path):
        where = f"line {number}"
        if not isinstance(data, dict):
            raise InvalidInput(f'{where}: expected an object with "text"')
        text = data.get("text")
        if not isinstance(text, str):
            raise InvalidInput(f'{where}: "text" must be non-empty text')
        try:
            text = clean_text(text)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        try:
            category = Category(data.get("category") or Category.OTHER)
        except ValueError:
            names = ", ".join(c.value for c in Category)
            raise InvalidInput(f"{where}: unknown category {data['category']!r} (one of {names})") from None
        pinned = data.get("pinned", False)
        if not isinstance(pinned, bool):
            raise InvalidInput(f'{where}: "pinned" must be true or false')
        agent = data.get("agent")
        if agent is not None and not isinstance(agent, str):
            raise InvalidInput(f'{where}: "agent" must be an agent\'s name or id')
        valid_from = _time(data.get("valid_from"), where)
        out.append(FactItem(number, text, category, valid_from, pinned, agent))
    return out
