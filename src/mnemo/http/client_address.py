"""Whose address a request comes from, and which forwarded headers may say so.

uvicorn rewrites the client's address from X-Forwarded-For (and the scheme from
X-Forwarded-Proto) only for requests from the proxies named in
`trusted_proxies`; with none named it ignores those headers. Both are passed to
uvicorn explicitly, so that its own default (trusting loopback, or whatever
FORWARDED_ALLOW_IPS says) cannot widen what the operator chose: a client that
could name its own address could dodge the limit on failed keys, or aim it at
someone else.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection

from ..settings import Settings


def forwarded_header_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for forwarded headers, for every way of running the server."""
    return {"proxy_headers": bool(settings.trusted_proxies), "forwarded_allow_ips": settings.trusted_proxies}


def address_of(request: HTTPConnection) -> str:
    """The client's address, as uvicorn reports it (see above)."""
    return request.client.host if request.client else "unknown"
