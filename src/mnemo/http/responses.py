"""The error answers of the API, as the OpenAPI schema documents them.

Every error has one shape, `{"error": {"message": ..., "code": ...}}` (errors.py; `code` is
stable whatever the wording: docs/reference/errors.md; the chat proxy answers in OpenAI's
shape, with its `type`, `param` and `code`). Every authenticated route may
answer 400 (a body that cannot be read), 401, 403, 413, 422, 429 and 507;
`errors(...)` adds what a router's routes also give.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Problem(BaseModel):
    where: str
    problem: str


class ErrorDetail(BaseModel):
    message: str
    # stable whatever the wording (docs/reference/errors.md); the chat proxy's errors are in
    # OpenAI's shape, whose code is OpenAI's own and often null
    code: str | None = None
    problems: list[Problem] | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


_WHY = {
    400: "The body could not be read; for the chat proxy, also a request it cannot forward"
    " or one the upstream model refused.",
    401: "No API key, or an unknown or revoked one.",
    403: "A key that may not do this: the admin key on a person's route, a person's on an admin route.",
    404: "Nothing with that id is yours (another user's ids answer the same).",
    409: "It changed meanwhile (a stale version), the name is taken, or another memory already says this.",
    413: "The request body is over the server's limit.",
    422: "The request is not valid; `problems` says where and why.",
    429: "A wrong key, after too many failed authentications from this address or for this key id"
    " (a right key is never refused); or, for a turn, too many of the person's turns already wait"
    " to be learnt from (nothing was stored): wait `Retry-After` seconds.",
    502: "The upstream model failed or could not be reached.",
    503: "No upstream model is configured, or it is unavailable.",
    504: "The upstream model sent nothing in time.",
    507: "The database's disk is full: nothing was stored.",
}
_HEADERS = {
    401: {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
    429: {
        "Retry-After": {
            "description": "Seconds until a wrong key from this address, or for this key id, gets 401"
            " again; or to wait before sending the turn again.",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
}
AUTHENTICATED = (400, 401, 403, 413, 422, 429, 507)


def errors(*extra: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of an authenticated route: the common ones and `extra`."""
    documented: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*AUTHENTICATED, *extra}):
        documented[status] = {"model": ErrorBody, "description": _WHY[status]}
        if status in _HEADERS:
            documented[status]["headers"] = _HEADERS[status]
    return documented
