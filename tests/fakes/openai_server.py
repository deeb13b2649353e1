"""A scripted OpenAI-compatible HTTP server, so tests drive the real `openai` client end to end.

It listens on 127.0.0.1 on an ephemeral port in a background thread. Chat
replies, failures and stalls are queued per route and consumed one per
request; embeddings are computed (a hashed bag of words) unless a failure or
stall is queued for them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import numpy as np

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"


@dataclass(frozen=True)
class _Reply:
    content: str


@dataclass(frozen=True)
class _Fail:
    status: int
    message: str


@dataclass(frozen=True)
class _Stall:
    seconds: float
    content: str


_Scripted = _Reply | _Fail | _Stall


class ScriptedOpenAI:
    """The server and its script. Use as a context manager, or start() / stop()."""

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[dict[str, Any]] = []
        self.default_reply: str | None = None
        # answers a chat request from its body when nothing is queued (None: no answer)
        self.responder: Callable[[dict[str, Any]], str | None] | None = None
        self.model = "scripted-model"
        self.embedding_dimensions = 64
        # Sent with every error reply so the client's retry backoff (0.5 s and
        # up by default) does not slow the tests; None restores the real backoff.
        self.retry_after_ms: int | None = 1
        self._queues: dict[str, deque[_Scripted]] = {
            CHAT_PATH: deque(),
            EMBEDDINGS_PATH: deque(),
        }
        self._rejected_formats: set[str] = set()
        # like a chat template that requires roles to alternate (Mistral Instruct on vLLM):
        # after system messages, user and assistant must take turns, starting with the user
        self.alternating_roles = False
        # whether a chat completion tells its usage (some servers send none); each one sent,
        # with whether its request asked for JSON (as learning does)
        self.send_usage = True
        self.usages: list[dict[str, int]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> ScriptedOpenAI:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        # Do not wait on handler threads at close: a stalled one wakes on _stopping.
        server.block_on_close = False
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        # A short poll interval keeps stop() (which waits for the next poll) fast.
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="scripted-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- script --------------------------------------------------------------

    def reply(self, content: str) -> None:
        """Queue one chat completion whose message content is `content`."""
        self._enqueue(CHAT_PATH, _Reply(content))

    def reply_json(self, obj: Any) -> None:
        """Queue one chat completion whose content is `obj` as JSON."""
        self.reply(json.dumps(obj))

    def fail(
        self,
        status: int,
        message: str = "scripted failure",
        times: int = 1,
        *,
        path: str = CHAT_PATH,
    ) -> None:
        """Queue `times` error replies in OpenAI's error body shape (chat, or `path`)."""
        for _ in range(times):
            self._enqueue(path, _Fail(status, message))

    def stall(self, seconds: float, content: str = "{}", *, path: str = CHAT_PATH) -> None:
        """Queue a reply that sleeps `seconds` first; a chat one then answers `content`."""
        self._enqueue(path, _Stall(seconds, content))

    def reject_response_format(self, types: set[str]) -> None:
        """Answer 400 to chat requests whose response_format.type is in `types`, queue untouched."""
        with self._lock:
            self._rejected_formats = set(types)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies sent to /v1/chat/completions, in order."""
        with self._lock:
            return [r["json"] for r in self.requests if r["path"] == CHAT_PATH]

    # -- serving (called from handler threads) -------------------------------

    def _enqueue(self, path: str, item: _Scripted) -> None:
        with self._lock:
            self._queues[path].append(item)

    def _record(self, request: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, path: str) -> _Scripted | None:
        with self._lock:
            queue = self._queues[path]
            return queue.popleft() if queue else None

    def _alternation_broken(self, body: dict[str, Any]) -> bool:
        if not self.alternating_roles:
            return False
        roles = [m.get("role") for m in body.get("messages", [])]
        while roles and roles[0] in ("system", "developer"):
            roles.pop(0)
        return any(role != ("user" if i % 2 == 0 else "assistant") for i, role in enumerate(roles))

    def _rejects(self, body: dict[str, Any]) -> str | None:
        format_type = (body.get("response_format") or {}).get("type")
        with self._lock:
            return format_type if format_type in self._rejected_formats else None

    def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when the server stops."""
        self._stopping.wait(seconds)


def _handler_for(script: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Silence the per-request stderr log."""

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def _handle(self, method: str) -> None:
            path = urlsplit(self.path).path
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            script._record(
                {
                    "path": path,
                    "method": method,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "json": body,
                }
            )
            try:
                if (method, path) == ("POST", CHAT_PATH):
                    self._chat(body or {})
                elif (method, path) == ("POST", EMBEDDINGS_PATH):
                    self._embeddings(body or {})
                elif (method, path) == ("GET", MODELS_PATH):
                    self._send_json(200, _models(script.model))
                else:
                    self._send_error(404, f"no route {method} {path}")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (e.g. its timeout fired during a stall)

        def _chat(self, body: dict[str, Any]) -> None:
            if script._alternation_broken(body):
                self._send_error(400, "Conversation roles must alternate user/assistant/user/assistant/...")
                return
            rejected = script._rejects(body)
            if rejected is not None:
                self._send_error(
                    400,
                    f"response_format type '{rejected}' is not supported by this server",
                    param="response_format",
                )
                return
            item = script._next(CHAT_PATH)
            if item is None and script.responder is not None:
                answer = script.responder(body)
                item = _Reply(answer) if answer is not None else None
            if item is None:
                if script.default_reply is None:
                    self._send_error(500, "no scripted reply")
                    return
                item = _Reply(script.default_reply)
            if isinstance(item, _Fail):
                self._send_error(item.status, item.message)
                return
            if isinstance(item, _Stall):
                script._sleep(item.seconds)
            model = body.get("model", script.model)
            if body.get("stream"):
                self._send_stream(_chunks(item.content, model))
            else:
                completion = _completion(item.content, model, _prompt_text(body))
                with script._lock:
                    if script.send_usage:  # learning asks for JSON; the proxy's chat does not
                        script.usages.append({**completion["usage"], "json": "response_format" in body})
                    else:
                        del completion["usage"]
                self._send_json(200, completion)

        def _embeddings(self, body: dict[str, Any]) -> None:
            item = script._next(EMBEDDINGS_PATH)
            if isinstance(item, _Fail):
                self._send_error(item.status, item.message)
                return
            if isinstance(item, _Stall):
                script._sleep(item.seconds)
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                self._send_error(400, "input must be a string or a list of strings", param="input")
                return
            dimensions = body.get("dimensions") or script.embedding_dimensions
            as_base64 = body.get("encoding_format") == "base64"
            model = body.get("model", script.model)
            self._send_json(200, _embedding_response(texts, dimensions, as_base64, model))

        def _send_json(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, status: int, message: str, param: str | None = None) -> None:
            headers = {}
            if script.retry_after_ms is not None:
                headers["retry-after-ms"] = str(script.retry_after_ms)
            error = {"message": message, "type": _error_type(status), "param": param, "code": None}
            self._send_json(status, {"error": error}, headers)

        def _send_stream(self, chunks: list[dict[str, Any]]) -> None:
            """Server-sent events as OpenAI sends them; the connection closing ends the body."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_exceeded"
    return "server_error" if status >= 500 else "invalid_request_error"


def _completion(content: str, model: str, prompt: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(prompt, content),
    }


def _chunks(content: str, model: str, pieces: int = 3) -> list[dict[str, Any]]:
    """`content` split over a few chat.completion.chunk events, then a finishing one."""
    ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    size = max(1, -(-len(content) // pieces))
    parts = [content[i : i + size] for i in range(0, len(content), size)] or [""]

    def chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    first, *rest = parts
    return [
        chunk({"role": "assistant", "content": first}, None),
        *(chunk({"content": part}, None) for part in rest),
        chunk({}, "stop"),
    ]


def _models(model: str) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": 0, "owned_by": "scripted"}],
    }


def _words(text: str) -> list[str]:
    # Text without word characters still gets a (hashed) word of its own.
    return re.findall(r"\w+", text.lower()) or [text]


def hashed_embedding(text: str, dimensions: int) -> np.ndarray:
    """A unit bag-of-words vector: equal texts are equal, texts sharing words are closer."""
    vector = np.zeros(dimensions, dtype=np.float32)
    for word in _words(text):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % dimensions] += 1.0
    return vector / np.linalg.norm(vector)


def _embedding_response(texts: list[str], dimensions: int, as_base64: bool, model: str) -> dict[str, Any]:
    data = []
    for index, text in enumerate(texts):
        vector = hashed_embedding(text, dimensions)
        # The SDK asks for base64 (little-endian float32) unless told otherwise.
        if as_base64:
            encoded: Any = base64.b64encode(vector.astype("<f4").tobytes()).decode()
        else:
            encoded = vector.tolist()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(len(_words(t)) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _prompt_text(body: dict[str, Any]) -> str:
    return " ".join(str(m.get("content") or "") for m in body.get("messages", []))


def _usage(prompt: str, completion: str) -> dict[str, int]:
    prompt_tokens, completion_tokens = len(_words(prompt)), len(_words(completion))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
