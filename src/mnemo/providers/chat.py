"""The chat model behind extraction: any OpenAI-compatible /v1/chat/completions endpoint."""

from __future__ import annotations

from typing import Any

import openai

from mnemo.providers.base import ModelError, ModelTimeout, ModelUnavailable, spent

# How strongly the reply is asked to be JSON, best first. Servers differ in
# what they accept (vLLM and OpenAI take json_schema, some llama.cpp builds and
# proxies only json_object, a few reject response_format altogether), and the
# caller validates the reply anyway, so a weaker level still works.
_JSON_SCHEMA, _JSON_OBJECT, _NO_FORMAT = "json_schema", "json_object", None
_FORMAT_LEVELS: tuple[str | None, ...] = (_JSON_SCHEMA, _JSON_OBJECT, _NO_FORMAT)

# SDK errors that mean "try again later" once the SDK's own retries are spent:
# unreachable or timed out (APITimeoutError is an APIConnectionError),
# rate-limited, or a 5xx. Shared with the OpenAI embedder.
UNAVAILABLE_ERRORS = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


def unavailable(err: Exception, message: str) -> ModelUnavailable:
    """The ModelUnavailable for one of UNAVAILABLE_ERRORS: a timeout, or not reached."""
    return (ModelTimeout if isinstance(err, openai.APITimeoutError) else ModelUnavailable)(message)


class OpenAIChatModel:
    """Asks for JSON at the strictest level the server accepts, and remembers that level.

    Retries live in the SDK (`max_retries`, with its backoff); what still fails
    after them because the server is unreachable, slow, rate-limited or broken
    becomes ModelUnavailable. Other API errors (a bad key, a prompt too long)
    become ModelError: trying again later would not help.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        self.model_name = model
        self._base_url = base_url
        self._level = 0
        # Local servers need no key, but the SDK refuses to start without one.
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "unused",
            timeout=timeout,
            max_retries=max_retries,
        )

    async def complete_json(
        self, messages: list[dict[str, Any]], *, schema: dict[str, Any], schema_name: str
    ) -> str:
        """The reply's text, verbatim (possibly not JSON at all): the caller validates it."""
        while True:
            level = self._level
            try:
                return await self._complete(messages, _FORMAT_LEVELS[level], schema, schema_name)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                if _FORMAT_LEVELS[level] is _NO_FORMAT or not _rejects_response_format(err):
                    raise ModelError(f"chat model {self.model_name!r} refused: {err}") from err
                # max(): a concurrent call may already have stepped further down.
                self._level = max(self._level, level + 1)
            except openai.APIStatusError as err:
                raise ModelError(f"chat model {self.model_name!r} refused: {err}") from err

    @property
    def json_format(self) -> str | None:
        """How the reply is asked to be JSON now: json_schema, json_object, or None (not at all)."""
        return _FORMAT_LEVELS[self._level]

    async def ping(self, timeout: float) -> None:
        try:
            await self._client.with_options(timeout=timeout, max_retries=0).models.list()
        except UNAVAILABLE_ERRORS as err:
            raise ModelUnavailable(f"chat model at {self._base_url} did not answer: {err}") from err
        except openai.APIStatusError as err:
            raise ModelError(f"chat model at {self._base_url} refused: {err}") from err

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def _complete(
        self,
        messages: list[dict[str, Any]],
        format_type: str | None,
        schema: dict[str, Any],
        schema_name: str,
    ) -> str:
        try:
            completion = await self._client.chat.completions.create(
                model=self.model_name,
                messages=messages,  # type: ignore[arg-type]  # plain dicts, as the API takes them
                temperature=0,
                response_format=_response_format(format_type, schema, schema_name),
            )
        except UNAVAILABLE_ERRORS as err:
            raise unavailable(
                err, f"chat model {self.model_name!r} at {self._base_url} did not answer: {err}"
            ) from err
        # the SDK does not validate replies: a usage may be missing, or lack a count
        usage = completion.usage
        spent(getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        return completion.choices[0].message.content or ""


def _response_format(format_type: str | None, schema: dict[str, Any], schema_name: str) -> Any:
    """The request's response_format for one level, or omit for none."""
    if format_type == _JSON_SCHEMA:
        # strict=False: strict mode rejects common schema features (optional
        # fields, defaults), and the caller validates the reply anyway.
        return {
            "type": _JSON_SCHEMA,
            "json_schema": {"name": schema_name, "schema": schema, "strict": False},
        }
    if format_type == _JSON_OBJECT:
        return {"type": _JSON_OBJECT}
    return openai.omit


def _rejects_response_format(err: openai.APIStatusError) -> bool:
    """Whether a 400/422 blames the response_format rather than the rest of the request."""
    text = f"{err.message} {err.body}".lower()
    return any(word in text for word in ("response_format", "json_schema", "json_object"))
