"""The API's error answers as exceptions: each carries the status and the body's
`{"error": {"message": …, "code": …, "problems": […]}}` (code: stable whatever the wording,
docs/reference/errors.md; problems: on 422, where and what)."""

from __future__ import annotations

from typing import Any

import httpx2


class MnemoError(Exception):
    """An answer of the API that is not a success (or no answer: `status` 0)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        problems: list[dict[str, Any]] | None = None,
        body: Any = None,
        retry_after: float | None = None,
        code: str = "error",
    ) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.code = code  # what the answer's body says (not_found, version_conflict, …): for a program
        self.problems = problems or []
        self.body = body
        self.retry_after = retry_after


class Unauthorized(MnemoError):
    """401 or 403: no key, a wrong or revoked one, or not the admin."""


class NotFound(MnemoError):
    """404: no such thing, or it is another person's."""


class Conflict(MnemoError):
    """409: a stale `version`, or the memory is not in a state that allows the change."""


class Invalid(MnemoError):
    """422 (or 400, 413): the request was refused as it stands; `problems` says where."""


class RateLimited(MnemoError):
    """429: too many failed authentications; `retry_after` is how long to wait."""


class Unavailable(MnemoError):
    """503, 502 or 507, or no answer at all: the server or its model cannot do it now."""


_BY_STATUS: dict[int, type[MnemoError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Unauthorized,
    404: NotFound,
    409: Conflict,
    413: Invalid,
    422: Invalid,
    429: RateLimited,
    502: Unavailable,
    503: Unavailable,
    507: Unavailable,
}


def error_of(response: httpx2.Response, retry_after: float | None = None) -> MnemoError:
    """The exception for an error answer, with what its body says."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    error = body.get("error") if isinstance(body, dict) else None
    code = "error"
    if isinstance(error, dict):
        message = str(error.get("message") or response.reason_phrase)
        problems = error.get("problems")
        code = str(error.get("code") or code)
    else:
        message, problems = (str(body)[:500] or response.reason_phrase), None
    kind = _BY_STATUS.get(response.status_code, MnemoError)
    return kind(
        response.status_code, message, problems=problems, body=body, retry_after=retry_after, code=code
    )
