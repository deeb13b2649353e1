"""The mnemo API over HTTP: `Client` (blocking) and `AsyncClient`, typed with the server's own
models (mnemo.schemas). It talks HTTP only: nothing of the core, the store or the server is
imported, so it serves a script on another machine as well as this one.

    from mnemo.client import Client
    with Client("http://127.0.0.1:8420", key="mnemo_…") as mnemo:
        fact = mnemo.add("I live in Porto")
        hits = mnemo.search("where do I live?").items
"""

from .calls import UNSET, Call
from .clients import AsyncClient, Client
from .errors import Conflict, Invalid, MnemoError, NotFound, RateLimited, Unauthorized, Unavailable
from .retry import NEVER, Retry

__all__ = [
    "NEVER",
    "UNSET",
    "AsyncClient",
    "Call",
    "Client",
    "Conflict",
    "Invalid",
    "MnemoError",
    "NotFound",
    "RateLimited",
    "Retry",
    "Unauthorized",
    "Unavailable",
]
