"""`mnemo import` of hostile files, every format, on both backends: wrong types where objects,
lists or text are due, nested garbage, huge numbers, nulls, lone surrogates and U+0000, invalid
UTF-8, a file that is not JSON. Each ends in exit 2 with a message naming the file, the line or
the record (by its place, and its id where it has one), never a traceback, and nothing of the
file is stored: not even its user."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.test_cli import Invoke, as_json, invoker

pytestmark = pytest.mark.slow  # the CLI, once a case and backend


def _lines(*records: object) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _doc(value: object) -> bytes:
    return json.dumps(value).encode()


HUGE = "9" * 5000  # past the 4,300 digits Python reads
DEEP = "[" * 100_000 + "]" * 100_000
SAID = {"role": "user", "content": "I like figs"}
CHATGPT_NODE = {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["I like figs"]}}
CLAUDE_SAID = {"sender": "human", "text": "I like figs"}
HEADER = {"type": "header", "format": 5, "user": {"id": "u-1", "name": "ana"}}
END = {"type": "end", "agents": 0, "facts": 0, "events": 0, "conversations": 0, "messages": 0, "recalls": 0}
TIME = "2024-03-01T10:00:00+00:00"


def _chatgpt(message: dict | None = None, **conversation: object) -> bytes:
    mapping = {"a": {"message": {**CHATGPT_NODE, **(message or {})}, "parent": None, "children": []}}
    return _doc([{"mapping": mapping, "current_node": "a", **conversation}])


def _claude(*messages: object, **conversation: object) -> bytes:
    return _doc([{"uuid": "c-1", "chat_messages": list(messages or [CLAUDE_SAID]), **conversation}])


def _mem0(**record: object) -> bytes:
    return _doc([{"id": "m-1", "memory": "I like figs", **record}])


def _conversation(**fields: object) -> bytes:
    said = [{"id": "m0", "role": "user", "content": "I like figs", "at": TIME}]
    record = {"type": "conversation", "id": "c-1", "created_at": TIME, "messages": said, **fields}
    return _lines(HEADER, record, {**END, "conversations": 1, "messages": len(record["messages"])})


CASES = [
    # any format: what is not JSON, or JSON no reader takes
    ("auto", b"\xff\xfe\x00garbage", "is not UTF-8 text"),
    ("auto", b"hello, world\n", "it is not JSON"),
    ("auto", f"[{HUGE}]".encode(), "not JSON mnemo reads"),
    ("auto", DEEP.encode(), "not JSON mnemo reads (nested too deep)"),
    ("chatgpt", f"[{HUGE}]".encode(), "not JSON mnemo reads"),
    ("claude", DEEP.encode(), "nested too deep"),
    ("mem0", b'[{"memory": "I like \xff figs"}]', "is not UTF-8 text"),
    ("khoj", b"null", "expected a JSON array"),
    ("facts", f'{{"text": "I like figs", "valid_from": {HUGE}}}\n'.encode(), "line 1: not JSON mnemo reads"),
    ("openai", f"{DEEP}\n".encode(), "line 1: not JSON mnemo reads (nested too deep)"),
    ("mnemo", f'{{"type": "header", "format": {HUGE}}}\n'.encode(), "line 1: not JSON mnemo reads"),
    ("mnemo", b"[1, 2]\n", "line 1: expected a JSON object"),
    # OpenAI JSONL
    ("openai", _lines({"messages": [None]}), "line 1, message 1: a message is an object"),
    (
        "openai",
        _lines({"messages": {"role": "user"}}),
        'line 1: expected a list of messages or an object with "messages"',
    ),
    ("openai", _lines({"id": "\ud800", "messages": [SAID]}), 'line 1: "id" is not an id mnemo can hold'),
    ("openai", _lines({"id": {"a": 1}, "messages": [SAID]}), 'line 1: "id" must be text or a number'),
    ("openai", _lines({"created": 1e300, "messages": [SAID]}), "line 1: 1e+300 is not a time"),
    (
        "openai",
        _lines([SAID], {"messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]}),
        'line 2, message 1: a part\'s "text" must be text',
    ),
    (
        "openai",
        _lines({"messages": [{"role": "user", "content": ["I like figs", 7]}]}),
        "line 1, message 1: a part must be text or an object, not int",
    ),
    (
        "openai",
        _lines({"messages": [{"role": ["user"], "content": "hi"}]}),
        'line 1, message 1: a message is an object with a "role"',
    ),
    # ChatGPT export
    ("chatgpt", _doc({"mapping": {}}), "not a ChatGPT export"),
    ("chatgpt", _doc([None]), "conversation 1: expected an object"),
    ("chatgpt", _chatgpt(current_node=["a"]), '"current_node" must be a node\'s id, not list'),
    (
        "chatgpt",
        _doc([{"mapping": {"a": {"parent": {"b": 1}}}, "current_node": "a"}]),
        "conversation 1: the \"parent\" of node 'a' must be a node's id",
    ),
    ("chatgpt", _chatgpt({"author": "user"}), 'conversation 1, message None: "author" must be an object'),
    ("chatgpt", _chatgpt({"content": "I like figs"}), '"content" must be an object'),
    ("chatgpt", _chatgpt({"metadata": [1]}), '"metadata" must be an object'),
    ("chatgpt", _chatgpt({"author": {"role": ["user"]}}), '"role" must be text'),
    (
        "chatgpt",
        _chatgpt({"content": {"content_type": "text", "parts": {"a": 1}}}),
        "content must be text or a list of parts",
    ),
    ("chatgpt", _chatgpt({"create_time": float("1e300")}), "1e+300 is not a time"),
    (
        "chatgpt",
        _chatgpt(title="Figs", id={"a": 1}),
        "conversation 1 ('Figs'): \"id\" must be text or a number",
    ),
    ("chatgpt", _chatgpt(id="\udc00"), '"id" is not an id mnemo can hold'),
    # Claude export
    ("claude", _claude(None), "conversation 1, message 1: a message is an object"),
    (
        "claude",
        _claude({"sender": ["human"], "text": "hi"}),
        'a message is an object with "sender" human or assistant',
    ),
    (
        "claude",
        _claude({"sender": "human", "text": {"a": 1}}),
        'conversation 1, message 1: "text" must be text',
    ),
    ("claude", _claude({"sender": "human", "content": {"a": 1}}), "content must be text or a list of parts"),
    ("claude", _claude(uuid="\ud800"), '"uuid" is not an id mnemo can hold'),
    ("claude", _claude(uuid=7), '"uuid" must be text'),
    ("claude", _claude({**CLAUDE_SAID, "created_at": [2024]}), "is not a time"),
    # mem0
    ("mem0", _mem0(id="\ud800"), 'record 1: "id" is not an id mnemo can hold'),
    ("mem0", _mem0(id="a\x00b"), 'record 1: "id" is not an id mnemo can hold'),
    ("mem0", _mem0(id="x" * 5000), 'record 1: "id" is not an id mnemo can hold'),
    ("mem0", _mem0(id=True), 'record 1: "id" must be text or a number'),
    ("mem0", _mem0(memory=None), "record 1 (id 'm-1'): \"memory\" must be text"),
    ("mem0", _mem0(memory=["I like figs"]), '"memory" must be text'),
    ("mem0", _mem0(metadata=[1]), '"metadata" must be an object'),
    ("mem0", _mem0(categories={"a": 1}), '"categories" must be a list of names'),
    ("mem0", _mem0(user_id={"name": "ana"}), '"user_id" must be text'),
    ("mem0", _mem0(hash=float("nan")), "record 1 (id 'm-1'): a field besides the memory ('hash') holds nan"),
    (
        "mem0",
        f'[{{"id": "m-1", "memory": "hi", "run_id": {"9" * 40}}}]'.encode(),
        "('run_id') holds a number out of range",
    ),
    ("mem0", _mem0(run_id=json.loads("[" * 200 + "]" * 200)), "nested more than 32 deep"),
    ("mem0", _doc({"results": {"id": "m-1"}}), "not a mem0 file"),
    # Khoj
    ("khoj", _doc([{"id": 1, "raw": None}]), "record 1 (id '1'): \"raw\" must be text"),
    ("khoj", _doc([{"id": "\ud800", "raw": "I like figs"}]), 'record 1: "id" is not an id mnemo can hold'),
    ("khoj", _doc([{"id": 1, "raw": "I like figs", "created_at": {"a": 1}}]), "is not a time"),
    # facts JSONL
    ("facts", _lines({"text": None}), 'line 1: "text" must be non-empty text'),
    ("facts", _lines({"text": "I like figs"}, {"text": "hi", "category": ["x"]}), "line 2: unknown category"),
    ("facts", _lines({"text": "hi", "pinned": "yes"}), 'line 1: "pinned" must be true or false'),
    ("facts", _lines({"text": "hi", "agent": 7}), 'line 1: "agent" must be an agent'),
    ("facts", _lines({"text": "hi", "valid_from": 1e300}), "line 1: 1e+300 is not a time"),
    # Markdown: any text is a list; what is not UTF-8 is refused
    ("markdown", b"- I like figs\n- \xed\xa0\x80\n", "is not UTF-8 text"),
    # a mnemo export
    (
        "mnemo",
        _lines({"type": "header", "format": 5, "user": "ana"}, END),
        "line 1: a header record that cannot be read",
    ),
    (
        "mnemo",
        _lines({"type": "header", "format": 5, "user": {"id": 7, "name": "ana"}}, END),
        're:line 1: a header record that cannot be read .*"id" must be text',
    ),
    (
        "mnemo",
        _lines({"type": "header", "format": 5, "user": {"id": "\ud800", "name": "ana"}}, END),
        "line 1: the record ('user.id') holds U+0000 or a lone surrogate",
    ),
    (
        "mnemo",
        _lines(HEADER, {"type": "agent", "id": "a\x00", "name": "Chef"}, {**END, "agents": 1}),
        "line 2: the record ('id') holds U+0000",
    ),
    (
        "mnemo",
        _lines(
            HEADER, {"type": "agent", "id": "a-1", "name": "Chef", "persona": {"a": 1}}, {**END, "agents": 1}
        ),
        're:line 2: an agent record that cannot be read .*"persona" must be text',
    ),
    (
        "mnemo",
        _conversation(created_at=None),
        're:line 2: a conversation record that cannot be read .*"created_at"',
    ),
    (
        "mnemo",
        _conversation(created_at="0001-01-01T00:00:00+14:00"),
        "re:line 2: a conversation record .*outside the years",
    ),
    ("mnemo", _conversation(agent_id={"a": 1}), '"agent_id" must be text'),
    (
        "mnemo",
        _conversation(messages=[{"id": "m1", "role": "user", "content": {"a": 1}}]),
        '"content" must be text',
    ),
    (
        "mnemo",
        _conversation(messages=[{"id": "m1", "role": "user", "content": "a\x00"}]),
        "line 2: the record ('messages[0].content') holds U+0000",
    ),
    (
        "mnemo",
        _conversation(messages=[{"id": "m1", "role": "user", "content": "a", "at": TIME}] * 2),
        "two of its messages have the same id",
    ),
    (
        "mnemo",
        _conversation(backfill=[{"turn_id": "m0", "run_id": "r", "said_at": None}]),
        '"said_at" must be an ISO 8601 time',
    ),
    ("mnemo", _conversation(backfill="xy"), "line 2: a conversation record that cannot be read"),
    ("mnemo", _conversation(extra=float("inf")), "line 2: the record ('extra') holds inf"),
    (
        "mnemo",
        _lines(
            HEADER,
            *[json.loads(_conversation().splitlines()[1])] * 2,
            {**END, "conversations": 2, "messages": 2},
        ),
        "line 3: conversation 'c-1' again (as on line 2)",
    ),
    (
        "mnemo",
        _lines(HEADER, {"type": "fact", "id": "f-1", "text": "x", "events": []}, {**END, "facts": 1}),
        "line 2: a fact record that cannot be read",
    ),
    ("mnemo", _lines(HEADER, {"type": 7}, END), "line 2: unknown record type 7"),
]


@pytest.fixture
def mnemo(tmp_path: Path, database_url: str | None) -> Invoke:
    return invoker(tmp_path / "data", database_url)


@pytest.mark.parametrize(("fmt", "content", "said"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_hostile_file_is_exit_2_naming_the_record_and_stores_nothing(
    mnemo: Invoke, tmp_path: Path, fmt: str, content: bytes, said: str
) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(content)
    result = mnemo("import", str(path), "--format", fmt, user="ana")  # a traceback fails the test here
    assert result.exit_code == 2, result.output
    if said.startswith("re:"):
        assert re.search(said[3:], result.stderr, re.IGNORECASE | re.DOTALL), result.stderr
    else:
        assert said.lower() in " ".join(result.stderr.split()).lower(), result.stderr
    assert "Traceback" not in result.output
    assert "sys." not in result.output and "Hostile.json" not in result.output  # mnemo's words, its name
    assert as_json(mnemo("users", "list", "--json")) == []  # nothing stored: not even the user
