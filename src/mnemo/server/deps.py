"""What routes receive: the Memory, the worker, and who is calling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from .. import keys
from ..domain import User
from ..jobs import Worker
from ..memory import Memory
from ..settings import Settings
from .auth_limit import count_failure, refuse_if_blocked


def get_memory(request: Request) -> Memory:
    return request.app.state.memory


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_worker(request: Request) -> Worker | None:
    return request.app.state.worker


@dataclass(frozen=True)
class Caller:
    """A user (by API key) or the administrator (by the admin key from settings)."""

    user: User | None
    admin: bool = False


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "send an API key as 'Authorization: Bearer <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


async def get_caller(request: Request) -> Caller:
    refuse_if_blocked(request)  # 429 while this address has failed too often; the key is not looked at
    token = _bearer(request)
    settings: Settings = request.app.state.settings
    if settings.admin_key and keys.same_secret(token, settings.admin_key):
        return Caller(None, admin=True)
    user = await get_memory(request).authenticate(token)
    if user is None:
        count_failure(request)
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"}
        )
    return Caller(user)


async def get_user(caller: Annotated[Caller, Depends(get_caller)]) -> User:
    if caller.user is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "the admin key cannot act as a user; use a user's key")
    return caller.user


async def require_admin(caller: Annotated[Caller, Depends(get_caller)]) -> Caller:
    if not caller.admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this needs the admin key")
    return caller


MemoryDep = Annotated[Memory, Depends(get_memory)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
WorkerDep = Annotated[Worker | None, Depends(get_worker)]
CurrentUser = Annotated[User, Depends(get_user)]
Admin = Annotated[Caller, Depends(require_admin)]
