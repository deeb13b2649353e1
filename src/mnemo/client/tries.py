"""One request's tries: after each answer or failure, done, or how long to wait for the next."""

from __future__ import annotations

import time
from typing import Any

import httpx2

from .calls import Call
from .errors import Unavailable, error_of
from .retry import RETRIED_STATUSES, Retry, retry_after, worth_retrying


class Tries:
    def __init__(self, policy: Retry, call: Call[Any]) -> None:
        self.policy = policy
        self.call = call
        self.attempt = 0
        self.started = time.monotonic()

    def answered(self, response: httpx2.Response) -> float | None:
        """None: the answer stands (read it with `result`); else the seconds to wait first.
        An error answer that is not tried again raises its MnemoError."""
        self.attempt += 1
        if response.is_success:
            return None
        after = retry_after(response)
        if response.status_code in RETRIED_STATUSES:
            wait = self.policy.wait(self.attempt, after)
            if self.policy.allows(self.attempt, self.started, wait):
                return wait
        raise error_of(response, after)

    def failed(self, failure: httpx2.TransportError) -> float:
        """No answer: the seconds to wait before the next try, or Unavailable."""
        self.attempt += 1
        wait = self.policy.wait(self.attempt, None)
        if worth_retrying(self.call.method, failure) and self.policy.allows(self.attempt, self.started, wait):
            return wait
        raise Unavailable(0, f"no answer from the server: {failure!r}") from failure

    def result(self, response: httpx2.Response) -> Any:
        return self.call.answer(response.json())
