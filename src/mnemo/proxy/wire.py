"""The parts of OpenAI's chat wire format the proxy reads or writes.

The proxy never re-serialises a reply: it only reads the assistant's text out
of it, to remember the turn, and sends the upstream's bytes on unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi.responses import JSONResponse

from ..domain import as_unicode


class ChatError(Exception):
    """A request the proxy answers with an error, in OpenAI's error shape."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        code: str | None = None,
        *,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        message = as_unicode(message)  # an upstream's error may quote what it could not read
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code
        self.param = param
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        error = {"message": self.message, "type": self.type, "param": self.param, "code": self.code}
        return JSONResponse({"error": error}, status_code=self.status, headers=self.headers)


def content_text(content: Any) -> str:
    """A message's text: a plain string, or the text parts of a multi-part content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def completion_text(raw: bytes) -> str:
    """The assistant's text in a (non-streamed) chat.completion body; '' if there is none."""
    try:
        choices = json.loads(raw).get("choices") or []
    except (ValueError, AttributeError):
        return ""
    first = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
    message = first.get("message") if first else None
    return content_text(message.get("content")) if isinstance(message, dict) else ""


class StreamedText:
    """Collects a streamed reply's bytes; `text()` reads the assistant's text from its deltas.

    Parsed at the end, not chunk by chunk: relaying must not wait on parsing,
    and chunk boundaries fall anywhere (inside an event, a line, a character).
    A last, cut-off event (the client went away mid-chunk) is skipped.
    """

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def feed(self, chunk: bytes) -> None:
        self._chunks.append(chunk)

    def text(self) -> str:
        raw = b"".join(self._chunks)
        pieces: list[str] = []
        events = 0
        for data in _sse_data(raw.decode("utf-8", "replace")):
            events += 1
            pieces.append(_delta_text(data))
        if not events:  # an upstream that ignored "stream": true and answered in one piece
            return completion_text(raw)
        return "".join(pieces)


def _sse_data(stream: str) -> list[str]:
    """The data of each server-sent event, multi-line data joined as the SSE spec says."""
    events: list[str] = []
    lines: list[str] = []
    for line in [*stream.splitlines(), ""]:
        if not line:
            if lines:
                events.append("\n".join(lines))
            lines = []
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
    return events


def _delta_text(data: str) -> str:
    if data.strip() == "[DONE]":
        return ""
    try:
        choices = json.loads(data).get("choices") or []
    except (ValueError, AttributeError):
        return ""
    return "".join(
        content_text((c.get("delta") or {}).get("content"))
        for c in choices
        if isinstance(c, dict) and c.get("index", 0) == 0
    )


def model_entry(model_id: str, owned_by: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": owned_by}
