"""The OpenAI-compatible chat proxy: /v1/chat/completions and /v1/models.

Point any OpenAI client at mnemo with a mnemo key: each request is answered by
the upstream model with what memory recalls for the latest user message
injected just before it, and the finished turn is stored and queued for
learning. The upstream's reply reaches the client byte for byte; mnemo only
adds headers (X-Mnemo-Recalled and -Recalled-Ids, X-Mnemo-Conversation, X-Mnemo-Turn).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, FastAPI, Request, Response

from ..auth import CurrentUser
from ..http.headers import AGENT_HEADER, AUTOMATION_HEADER, CONVERSATION_HEADER, REMEMBER_HEADER
from ..http.responses import errors
from .forward import Proxy
from .prepare import MAX_DEPTH, check_body
from .relay import StreamRelay
from .upstream import Upstream, relayed_headers
from .wire import ChatError


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The proxy, with one pooled client to the upstream for the app's lifetime (FastAPI runs this
    inside the app's own, which has opened the core)."""
    state = app.state
    upstream = Upstream.from_settings(state.settings)
    state.proxy = Proxy(state.memory, state.accounts, state.settings, upstream)
    try:
        yield
    finally:
        if upstream is not None:
            await upstream.aclose()


router = APIRouter(
    prefix="/v1", tags=["chat proxy"], responses=errors(404, 502, 503, 504), lifespan=_lifespan
)

_OPENAI_OBJECT = {"type": "object", "description": "as OpenAI's"}
_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    **_OPENAI_OBJECT,
                    "required": ["messages"],
                    "properties": {
                        "messages": {"type": "array", "minItems": 1, "items": {"type": "object"}},
                        "model": {
                            "type": ["string", "null"],
                            "description": "an upstream model, or one of your agents",
                        },
                        "stream": {"type": ["boolean", "null"]},
                    },
                }
            }
        },
    },
    "responses": {
        "200": {
            "description": "The upstream's reply, relayed unchanged: a chat.completion, or its chunks as"
            " server-sent events when `stream` is true.",
            "content": {
                "application/json": {"schema": _OPENAI_OBJECT},
                # before OpenAPI 3.2, an event stream's schema describes one event
                "text/event-stream": {
                    "schema": {
                        "type": "object",
                        "required": ["data"],
                        "properties": {"data": {"type": "string", "description": "a chunk, or [DONE]"}},
                    }
                },
            },
        }
    },
}


@router.post("/chat/completions", openapi_extra=_BODY_DOC)
async def chat_completions(request: Request, user: CurrentUser) -> Response:
    """OpenAI's chat completions, streamed or not, with memory recalled before and learnt after."""
    proxy = _proxy(request)
    try:
        body = check_body(await _json(request))
        mnemo_headers = _mnemo_headers(request)
        stream = bool(body.get("stream"))
        if not stream:
            done = await proxy.complete(user, body, mnemo_headers)
            prepared, reply = done.prepared, done.reply
        else:
            forwarded = await proxy.forward(user, body, mnemo_headers, stream=True)
            prepared, reply = forwarded.prepared, forwarded.reply
    except ChatError as err:
        return err.response()

    headers = {
        **relayed_headers(reply),
        "content-type": reply.headers.get("content-type", "application/json"),
        "x-mnemo-recalled": str(prepared.recalled),
        "x-mnemo-recalled-ids": prepared.recalled_ids,
        # the header carries UTF-8 bytes, as the client sent them (Starlette writes Latin-1)
        "x-mnemo-conversation": prepared.conversation_id.encode().decode("latin-1"),
    }
    if not stream:
        # the turn was stored (or not) before this answer: it says which
        return Response(
            reply.content, status_code=reply.status_code, headers={**headers, **done.stored.headers()}
        )
    headers["cache-control"] = "no-cache"
    # its turn is stored once the stream ends: the header can only say in advance when it won't be
    if (known := await proxy.unstored(prepared)) is not None:
        headers.update(known.headers())
    else:  # stored before the body ends, under the id chosen ahead
        headers["x-mnemo-turn"] = prepared.turn_id

    async def finish(text: str) -> None:
        await proxy.remember(prepared, text)

    return StreamRelay(reply, headers, finish)


@router.get("/models")
async def list_models(request: Request, user: CurrentUser) -> dict:
    """The upstream model, and one model per agent of the caller: naming it in `model` picks the agent."""
    return {"object": "list", "data": await _proxy(request).models(user)}


def _proxy(request: Request) -> Proxy:
    return request.app.state.proxy


async def _json(request: Request) -> object:
    try:
        return json.loads(await request.body())
    except ValueError as exc:
        raise ChatError(400, f"the request body is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ChatError(400, f"the request body nests more than {MAX_DEPTH} levels deep") from None


def _mnemo_headers(request: Request) -> dict[str, str]:
    """mnemo's own request headers as text. HTTP carries bytes and Starlette reads them as
    Latin-1; clients send UTF-8 ("été"), so the bytes are read again as UTF-8."""
    out = {}
    for name in (AGENT_HEADER, CONVERSATION_HEADER, AUTOMATION_HEADER, REMEMBER_HEADER):
        value = request.headers.get(name)
        if value is not None:
            try:
                out[name] = value.encode("latin-1").decode("utf-8")
            except UnicodeDecodeError:
                raise ChatError(400, f"{name} is not UTF-8 text", param=name) from None
    return out
