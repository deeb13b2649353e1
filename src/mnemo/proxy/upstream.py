"""The model server the proxy forwards to: one pooled HTTP client for the app's lifetime."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from ..settings import Settings
from .wire import ChatError

# Upstream response headers worth passing on: request ids for support tickets,
# and the rate-limit and retry hints the OpenAI client obeys when it backs off.
_RELAYED_HEADERS = ("x-request-id", "openai-processing-ms", "retry-after", "retry-after-ms")
_RELAYED_PREFIXES = ("x-ratelimit-",)


class Upstream:
    def __init__(self, base_url: str, api_key: str | None, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout
        headers = {"Accept-Encoding": "identity"}  # relayed as they come: no decoding needed
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx2.AsyncClient(
            base_url=self.base_url + "/",
            headers=headers,
            # `timeout` bounds each wait for the upstream's next bytes (a slow model
            # streams steadily; a silent one is stuck); an unreachable host fails fast.
            timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
            # Many clients at once on one model server; the default pool of 100 is
            # fine, but keep more connections warm than httpx's 20 so bursts do not
            # pay for new TCP handshakes.
            limits=httpx2.Limits(max_connections=200, max_keepalive_connections=64),
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> Upstream | None:
        if not settings.upstream_base_url:
            return None
        return cls(settings.upstream_base_url, settings.upstream_api_key, settings.upstream_timeout)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def chat(self, body: dict[str, Any], *, stream: bool) -> httpx2.Response:
        """The upstream's successful reply (its body unread when streaming), or a ChatError."""
        request = self._client.build_request(
            "POST",
            "chat/completions",
            content=json.dumps(body, ensure_ascii=False).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            response = await self._client.send(request, stream=stream)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            raise ChatError(
                502,
                f"the upstream model at {self.base_url} could not be reached: {exc or type(exc).__name__}",
                "server_error",
                "upstream_unreachable",
            ) from exc
        except httpx2.TimeoutException as exc:
            raise ChatError(
                504,
                f"the upstream model at {self.base_url} sent nothing for {self._timeout:g} s",
                "server_error",
                "upstream_timeout",
            ) from exc
        except httpx2.HTTPError as exc:
            raise ChatError(
                502,
                f"the upstream model at {self.base_url} failed: {exc or type(exc).__name__}",
                "server_error",
                "upstream_failed",
            ) from exc
        if response.status_code >= 400:
            try:
                raw = await response.aread()
            except httpx2.HTTPError:
                raw = b""
            finally:
                await response.aclose()
            raise upstream_error(response.status_code, raw, relayed_headers(response))
        return response


def relayed_headers(response: httpx2.Response) -> dict[str, str]:
    return {
        name: value
        for name, value in response.headers.items()
        if name.lower() in _RELAYED_HEADERS or name.lower().startswith(_RELAYED_PREFIXES)
    }


def upstream_error(status: int, raw: bytes, headers: dict[str, str]) -> ChatError:
    """The upstream's error, same status, its message prefixed so one can tell whose error it is."""
    detail: dict[str, Any] = {}
    try:
        parsed = json.loads(raw)
        found = parsed.get("error") if isinstance(parsed, dict) else None
        detail = found if isinstance(found, dict) else {"message": found or parsed.get("detail")}
    except (ValueError, AttributeError):
        pass
    message = detail.get("message") or raw.decode("utf-8", "replace").strip()[:500] or "no details"
    kind = detail.get("type") or ("server_error" if status >= 500 else "invalid_request_error")
    code = detail.get("code")
    return ChatError(
        status,
        f"the upstream model answered {status}: {message}",
        str(kind),
        str(code) if code is not None else None,
        param=detail.get("param") if isinstance(detail.get("param"), str) else None,
        headers=headers,
    )
