"""What routes receive: the Memory, the Accounts, the settings, and who is calling."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from ..accounts import Accounts
from ..domain import User
from ..memory import Memory
from ..settings import Settings
from .callers import Caller, KeyRefused, identify


def get_memory(request: Request) -> Memory:
    return request.app.state.memory


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_accounts(request: Request) -> Accounts:
    return request.app.state.accounts


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
    try:
        return await identify(request, _bearer(request))
    except KeyRefused as refused:
        if refused.wait is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED, str(refused), headers={"WWW-Authenticate": "Bearer"}
            ) from None
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            "too many failed authentications from your address or for this key id;"
            f" try again in {refused.wait} s",
            headers={"Retry-After": str(refused.wait)},
        ) from None


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
AccountsDep = Annotated[Accounts, Depends(get_accounts)]
CurrentUser = Annotated[User, Depends(get_user)]
Admin = Annotated[Caller, Depends(require_admin)]
