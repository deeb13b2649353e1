"""What routes receive: the Memory, the Accounts and the settings. Who is calling: mnemo.auth."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..accounts import Accounts
from ..memory import Memory
from ..settings import Settings


def get_memory(request: Request) -> Memory:
    return request.app.state.memory


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_accounts(request: Request) -> Accounts:
    return request.app.state.accounts


MemoryDep = Annotated[Memory, Depends(get_memory)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
AccountsDep = Annotated[Accounts, Depends(get_accounts)]
