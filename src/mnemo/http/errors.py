"""mnemo's errors as HTTP answers, and a limit on request bodies. Nothing answers 500 on bad input."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..domain import Conflict, InvalidInput, NotFound, QueueFull, StorageFull
from ..providers.base import ModelError, ModelUnavailable

# The codes of refusals that are no error of mnemo's own (mnemo.domain.MnemoError has those):
# by HTTP status, the same on every route (docs/reference/errors.md lists both)
HTTP_CODES: dict[int, tuple[str, str]] = {
    400: ("bad_request", "The request is not one the server can read (a form no page sends)."),
    401: ("unauthorized", "No key, or a wrong or revoked one."),
    403: (
        "forbidden",
        "The key is right but may not do this (a person's key on an admin route, a disabled account).",
    ),
    404: ("not_found", "No such route, or nothing there for this key."),
    405: ("method_not_allowed", "The route does not take this method."),
    413: ("body_too_large", "The request body is over MNEMO_MAX_BODY_BYTES."),
    422: (
        "invalid_request",
        "The body or a parameter does not have the shape the schema says (`problems` says where).",
    ),
    429: (
        "rate_limited",
        "Too many wrong keys from this address or for this key id (Retry-After says how long).",
    ),
    500: ("internal", "A bug, not bad input: the server's log has the details."),
}


def http_code(status: int) -> str:
    return HTTP_CODES[status][0] if status in HTTP_CODES else "error"


def _error(
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    *,
    code: str | None = None,
    **extra: object,
) -> JSONResponse:
    body = {"error": {"message": message, "code": code or http_code(status), **extra}}
    return JSONResponse(body, status_code=status, headers=headers)


def _problem(error: dict) -> dict[str, str]:
    """One validation error, worded for a person: where, and what is wrong."""
    loc = [str(p) for p in error.get("loc", ())]
    kind = error.get("type", "")
    message = str(error.get("msg", "invalid"))
    if kind == "json_invalid":
        detail = (error.get("ctx") or {}).get("error")
        return {"where": "body", "problem": f"not valid JSON ({detail})" if detail else "not valid JSON"}
    if loc == ["body"] and kind in ("model_attributes_type", "dict_type"):
        message = "expected a JSON object (sent as Content-Type: application/json)"
    elif loc == ["body"] and kind == "missing":
        message = "a JSON body is required"
    elif kind == "extra_forbidden":
        message = "unknown field"
    message = message.removeprefix("Value error, ")
    return {"where": ".".join(loc) or "request", "problem": message}


# The HTTP status of each kind of mnemo's errors (a subclass answers as its nearest kind here)
ERROR_STATUS: dict[type[Exception], int] = {
    NotFound: 404,
    Conflict: 409,
    InvalidInput: 422,
    QueueFull: 429,
    ModelError: 502,
    ModelUnavailable: 503,
    StorageFull: 507,
}


def status_of(kind: type[Exception]) -> int | None:
    """The status a kind of error is answered with (None: it is not answered over HTTP)."""
    return next((ERROR_STATUS[k] for k in kind.__mro__ if k in ERROR_STATUS), None)


def install(app: FastAPI) -> None:
    async def known(_: Request, exc: Exception) -> JSONResponse:
        status = status_of(type(exc)) or 500
        message = str(exc) or "not found"
        headers = None
        if isinstance(exc, StorageFull):
            message = f"{exc}; free some disk space and try again"
        elif isinstance(exc, QueueFull):
            headers = {"Retry-After": str(exc.retry_after)}
        return _error(status, message, headers, code=getattr(exc, "code", None))

    for kind in ERROR_STATUS:
        app.add_exception_handler(kind, known)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        # a bug, not bad input: the same shape, no details (the server's log has the traceback)
        return _error(500, "internal error: the server could not handle this request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # one error shape for every answer: {"error": {"message": ...}}
        return _error(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(e) for e in exc.errors()]
        first = problems[0] if problems else {"where": "request", "problem": "invalid"}
        return _error(422, f"{first['where']}: {first['problem']}", problems=problems)


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413, whether or not they announce a length."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _error(413, f"request body over {self.limit} bytes")(scope, receive, send)
            return
        refusal = Refusal(413)
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # FastAPI would answer the client's leaving with 400: the 413 goes out instead
                    return refusal.refuse(f"request body over {self.limit} bytes")
            return message

        await refusal.run(self.app, scope, limited, send)


class Refusal:
    """A middleware's refusal of a request the app is already handling: the app is told that the
    client left, its answer is dropped, and the refusal goes out instead (unless the app's answer
    had begun: then that one is cut short, and uvicorn closes the connection)."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.headers = headers
        self.reason = ""
        self.started = False

    def refuse(self, reason: str) -> Message:
        """What the app's receive() gets instead of the request's next message."""
        self.reason = reason
        return {"type": "http.disconnect"}

    async def run(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        async def receiving() -> Message:
            if self.reason:  # asked again after being told the client left
                return {"type": "http.disconnect"}
            return await receive()

        async def guarded(message: Message) -> None:
            if self.reason:
                return
            if message["type"] == "http.response.start":
                self.started = True
            await send(message)

        try:
            await app(scope, receiving, guarded)
        except Exception:
            if not self.reason:
                raise
        if self.reason and not self.started:
            await _error(self.status, self.reason, headers=self.headers)(scope, receive, send)
