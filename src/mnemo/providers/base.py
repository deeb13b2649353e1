"""The two model contracts mnemo depends on. Implementations live beside this module."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..domain import FailReason, TokenUsage


class ModelError(Exception):
    """The model answered with an error that trying again will not mend (a bad key, a bad request)."""

    code = "model_error"  # as mnemo.domain.MnemoError's codes (docs/reference/errors.md)
    reason = FailReason.REFUSED_BY_POLICY


class ModelUnavailable(ModelError):
    """The model could not be reached or did not answer in time (after retries).

    The caller may try the same work again later; nothing was learnt from it.
    """

    code = "model_unavailable"
    reason = FailReason.MODEL_UNREACHABLE


class ModelTimeout(ModelUnavailable):
    """The model did not answer in time (after retries)."""

    reason = FailReason.TIMEOUT


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed size."""

    @property
    def model_name(self) -> str: ...
    @property
    def dimensions(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Texts to store: shape (len(texts), dimensions), dtype float32, each row of unit length."""
        ...

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Texts to search the stored ones with (a question, a topic), in the same space.

        Most models embed both sides alike; some (e5) were trained to mark which side a
        text is on, and recall better when told.
        """
        ...


@runtime_checkable
class ChatModel(Protocol):
    """An OpenAI-compatible chat endpoint."""

    model_name: str

    async def complete_json(
        self, messages: list[dict[str, Any]], *, schema: dict[str, Any], schema_name: str
    ) -> str:
        """The raw text of the reply, asked for as JSON matching `schema`.

        Returns whatever the model said, unparsed: the caller validates it, so
        that the valid part of a partly malformed reply is kept.
        Raises ModelUnavailable when the endpoint fails or times out after retries.
        """
        ...

    async def ping(self, timeout: float) -> None:
        """Ask the endpoint something cheap (its models), once, within `timeout` seconds.
        Raises ModelUnavailable when it cannot be reached or fails, ModelError when it refuses."""
        ...


class Meter:
    """The tokens of the chat calls made while it is open (see `metered`)."""

    def __init__(self) -> None:
        self.usage = TokenUsage()


_METER: ContextVar[Meter | None] = ContextVar("mnemo_chat_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """Count the tokens of every chat call made inside (in this task and the calls it awaits):
    a ChatModel reports each reply's usage with `spent`, so the protocol stays as it is."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def spent(prompt_tokens: int | None, completion_tokens: int | None) -> None:
    """One chat reply's usage, to the open meter if any; None for a reply that told none
    (its tokens unknown: one unreported call, not zero)."""
    meter = _METER.get()
    if meter is None:
        return
    if prompt_tokens is None or completion_tokens is None:
        meter.usage += TokenUsage(calls=1, unreported=1)
    else:
        meter.usage += TokenUsage(max(0, prompt_tokens), max(0, completion_tokens), calls=1)
