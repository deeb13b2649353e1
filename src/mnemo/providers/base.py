"""The two model contracts mnemo depends on. Implementations live beside this module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..domain import FailReason


class ModelError(Exception):
    """The model answered with an error that trying again will not mend (a bad key, a bad request)."""

    reason = FailReason.REFUSED_BY_POLICY


class ModelUnavailable(ModelError):
    """The model could not be reached or did not answer in time (after retries).

    The caller may try the same work again later; nothing was learnt from it.
    """

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
        """Shape (len(texts), dimensions), dtype float32, each row of unit length."""
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
