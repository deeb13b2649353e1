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
- `mem0`, `khoj`, `markdown`: memories kept by other tools, and lists of facts (tools.py).
- `claude`: the `conversations.json` of a Claude data export (tools.py).

Only what a person and their assistant said is kept of a conversation: user
and assistant messages with text; system, developer and tool messages, tool
calls and empty messages are left out.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from ...domain import Category, InvalidInput, Origin, as_unicode, as_utc, clean_text, is_unicode, parse_time


class Format(StrEnum):
    AUTO = "auto"
    MNEMO = "mnemo"
    OPENAI = "openai"
    CHATGPT = "chatgpt"
    CLAUDE = "claude"
    FACTS = "facts"
    MEM0 = "mem0"
    KHOJ = "khoj"
    MARKDOWN = "markdown"


# the formats whose items are facts (the others hold conversations, or are a mnemo export)
FACT_FORMATS = (Format.FACTS, Format.MEM0, Format.KHOJ, Format.MARKDOWN)
CONVERSATION_FORMATS = (Format.OPENAI, Format.CHATGPT, Format.CLAUDE)


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
    where: str  # "line 3", "record 2 (id 'm-7')": for messages to the person
    text: str
    category: Category = Category.OTHER
    valid_from: datetime | None = None
    pinned: bool = False
    agent: str | None = None  # an agent's name or id (the user's, or to be made: mem0)
    user: str | None = None  # the user it belongs to by name (mem0), else the import's
    created_at: datetime | None = None  # when it was first kept (else: the time of the import)
    origin: Origin | None = None  # the tool it was kept in, its id there, what else it held
    details: dict[str, Any] | None = None  # the origin's details, screened by the gate on import


# -- reading ----------------------------------------------------------------------------


@contextmanager
def utf8(path: Path) -> Iterator[TextIO]:
    """The file opened as UTF-8 text (a byte-order mark skipped); InvalidInput if it is not."""
    try:
        with path.open(encoding="utf-8-sig") as f:
            yield f
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path.name} is not UTF-8 text ({exc.reason})") from None


def lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each line of a text file with its number (from 1), one at a time."""
    with utf8(path) as f:
        yield from enumerate(f, start=1)


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file, parsed, with its number (from 1)."""
    for number, text in lines(path):
        if not text.strip():
            continue
        try:
            yield number, _parsed(partial(json.loads, text), f"line {number}")
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc.msg}, column {exc.colno})") from exc


def json_document(path: Path) -> Any:
    """A file holding one JSON document (an array, an object), parsed whole."""
    try:
        with utf8(path) as f:
            return _parsed(lambda: json.load(f), path.name)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {exc.lineno}: not JSON ({exc.msg}, column {exc.colno})") from exc


def _parsed(parse: Callable[[], Any], where: str) -> Any:
    """What `parse` reads; JSON that Python's reader refuses past its syntax (a number of more
    than 4,300 digits, arrays nested thousands deep) is InvalidInput naming `where`."""
    try:
        return parse()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise  # said where they are, by the callers
    except RecursionError:
        raise InvalidInput(f"{where}: not JSON mnemo reads (nested too deep)") from None
    except ValueError:  # int()'s limit on digits (its message names a Python function)
        raise InvalidInput(f"{where}: not JSON mnemo reads (a number of more than 4,300 digits)") from None


MAX_DEPTH = 32  # arrays and objects within each other, in what a file may store
MAX_ID = 1000  # characters of an id a file gives
_INT64 = 2**63


def storable(
    value: Any, where: str, what: str, *, strings: bool = True, at: str = "", depth: int = 0
) -> None:
    """InvalidInput naming `where`, `what` and the field (`at`) unless `value` is JSON that both
    stores keep as it is: nested at most MAX_DEPTH deep, numbers finite and within 64 bits, and
    (`strings`) no text holding U+0000 or a lone surrogate."""
    problem = None
    if isinstance(value, str):
        if strings and ("\x00" in value or not is_unicode(value)):
            problem = "holds U+0000 or a lone surrogate, which no store holds"
    elif isinstance(value, bool) or value is None:
        problem = None  # true, false and null: every store keeps them (a bool is no int here)
    elif isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            problem = "holds a number out of range (beyond 64 bits)"
    elif isinstance(value, float):
        if not math.isfinite(value):
            problem = f"holds {value}, which is no number a store holds"
    elif depth >= MAX_DEPTH:
        problem = f"is nested more than {MAX_DEPTH} deep"
    elif isinstance(value, dict):
        for key, item in value.items():
            inner = f"{at}.{key}" if at else str(key)
            storable(key, where, what, strings=strings, at=inner, depth=depth + 1)
            storable(item, where, what, strings=strings, at=inner, depth=depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            storable(item, where, what, strings=strings, at=f"{at}[{i}]", depth=depth + 1)
    if problem is not None:
        field = f" ({as_unicode(at)[:80]!r})" if at else ""
        raise InvalidInput(f"{where}: {what}{field} {problem}")


def source_id(value: Any, where: str, key: str, *, numbers: bool = True) -> str | None:
    """The file's own id for a record (text, or a whole number where `numbers`), as mnemo keeps
    it; None when absent. InvalidInput for anything else, or an id no store holds."""
    if value is None:
        return None
    if not (isinstance(value, str) or (numbers and isinstance(value, int) and not isinstance(value, bool))):
        raise InvalidInput(f'{where}: "{key}" must be text' + (" or a number" if numbers else ""))
    text = str(value)
    if "\x00" in text or not is_unicode(text) or len(text) > MAX_ID:
        raise InvalidInput(
            f'{where}: "{key}" is not an id mnemo can hold (U+0000, a lone surrogate, or over {MAX_ID}'
            " characters)"
        )
    return text


def json_object(value: Any, where: str, key: str) -> dict[str, Any]:
    """A field that must hold an object (absent or null: an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f'{where}: "{key}" must be an object')
    return value


# an array of objects: which format, from the keys of its first object (a mem0 export
# may also be an object of "results")
_FIRST_KEYS = (
    ("mapping", Format.CHATGPT),
    ("chat_messages", Format.CLAUDE),
    ("memory", Format.MEM0),
    ("raw", Format.KHOJ),
    ("role", Format.OPENAI),
)
_HEAD = 1 << 20  # how much of a JSON document is read to tell its format from its first item
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text")


def detect(path: Path) -> Format:
    """The format of a file: from its first line (JSONL), the first item of the JSON document it
    is, or, for text that is not JSON, its name (.md, .markdown, .txt, .text: a list of facts)."""
    with utf8(path) as f:
        head = f.read(_HEAD)
        if len(head) == _HEAD and "\n" not in head.lstrip():
            head += f.readline()  # a first line longer than the head: all of it (a long JSONL line)
        head = head.lstrip()
    if not head:
        raise InvalidInput(f"{path.name} is empty")
    line = head.split("\n", 1)[0]
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or JSON past what Python reads
        if head[0] in "[{":  # a document over many lines
            return _document_format(path, head)
        if path.suffix.lower() in TEXT_SUFFIXES:
            return Format.MARKDOWN
        raise InvalidInput(
            f"cannot tell the format of {path.name}: it is not JSON; give --format markdown"
            " if it is a list of facts"
        ) from None
    if first == [] and head.rstrip() == "[]":
        raise InvalidInput(f"{path.name} holds an empty list: nothing to import")
    if isinstance(first, list):  # a line of messages, or an export's array on one line
        return _array_format(first, path) if first else Format.OPENAI
    if isinstance(first, dict):
        if first.get("type") in ("header", "user") and "format" in first:
            return Format.MNEMO
        if isinstance(first.get("results"), list):
            return Format.MEM0
        if "messages" in first:
            return Format.OPENAI
        if "text" in first:
            return Format.FACTS
    raise InvalidInput(f"cannot tell the format of {path.name} from its first line; give --format")


def _document_format(path: Path, head: str) -> Format:
    """The format of a JSON document over many lines, from its first item (read alone when it
    is in the first megabyte, else the whole file is)."""
    if head[0] == "{":
        document = json_document(path)
        if isinstance(document, dict) and isinstance(document.get("results"), list):
            return Format.MEM0
        raise InvalidInput(f"cannot tell the format of {path.name}: a JSON object; give --format")
    at = len(head) - len(head[1:].lstrip())
    if head[at : at + 1] == "]":
        raise InvalidInput(f"{path.name} holds an empty list: nothing to import")
    try:
        first, _ = json.JSONDecoder().raw_decode(head, at)
    except (ValueError, RecursionError):
        document = json_document(path)  # its error names the line, or the first item was long
        first = document[0] if isinstance(document, list) and document else None
    return _array_format([first], path)


def _array_format(items: list[Any], path: Path) -> Format:
    first = items[0]
    if isinstance(first, dict):
        for key, fmt in _FIRST_KEYS:
            if key in first:
                return fmt
    raise InvalidInput(f"cannot tell the format of {path.name} from its first item; give --format")


def time_of(value: Any, where: str) -> datetime | None:
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


def text_of(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):  # NUL and lone surrogates: what no store holds
        return as_unicode(content.replace("\x00", ""))
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                said = part.get("text") if part.get("type") in ("text", "input_text", "output_text") else None
                if said is not None and not isinstance(said, str):
                    raise InvalidInput(f'{where}: a part\'s "text" must be text')
                parts.append(said or "")
            elif part is not None:
                raise InvalidInput(f"{where}: a part must be text or an object, not {type(part).__name__}")
        return as_unicode("\n".join(p for p in parts if p).replace("\x00", ""))
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
            text = text_of(m.get("content"), at).strip()
            if role in KEPT_ROLES and text:
                kept.append((role, text, None))
        source = source_id(meta.get("id", meta.get("conversation_id")), where, "id")
        created = time_of(meta.get("created", meta.get("created_at")), where)
        out.append(ConversationItem(where, source, created, tuple(kept)))
    return out


# -- ChatGPT data export -------------------------------------------------------------------


def chatgpt_conversations(path: Path) -> list[ConversationItem]:
    data = json_document(path)
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
    source = source_id(c.get("id", c.get("conversation_id")), where, "id")
    node_id = c.get("current_node")
    if node_id is None:  # no branch marked: the last leaf
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        node_id = leaves[-1] if leaves else None
    branch = []
    seen = set()
    what = '"current_node"'
    while node_id is not None:
        if not isinstance(node_id, str):
            raise InvalidInput(f"{where}: {what} must be a node's id, not {type(node_id).__name__}")
        node = mapping.get(node_id)
        if not isinstance(node, dict) or node_id in seen:
            raise InvalidInput(f"{where}: node {node_id!r} is missing or in a cycle")
        seen.add(node_id)
        branch.append(node)
        node_id, what = node.get("parent"), f'the "parent" of node {node_id!r}'
    kept = []
    for node in reversed(branch):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        at = f"{where}, message {message.get('id')!r}"
        role = json_object(message.get("author"), at, "author").get("role")
        content = json_object(message.get("content"), at, "content")
        metadata = json_object(message.get("metadata"), at, "metadata")
        named = {
            "role": role,
            "content_type": content.get("content_type"),
            "recipient": message.get("recipient"),
        }
        for key, value in named.items():
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f'{at}: "{key}" must be text')
        if (
            role not in KEPT_ROLES
            or content.get("content_type") not in ("text", "multimodal_text")
            or message.get("recipient", "all") != "all"
            or metadata.get("is_visually_hidden_from_conversation")
        ):
            continue
        text = text_of(content.get("parts"), at).strip()
        if text:
            kept.append((role, text, time_of(message.get("create_time"), at)))
    return ConversationItem(where, source, time_of(c.get("create_time"), where), tuple(kept))


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
        valid_from = time_of(data.get("valid_from"), where)
        out.append(FactItem(where, text, category, valid_from, pinned, agent))
    return out
