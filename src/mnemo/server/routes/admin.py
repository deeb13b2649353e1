"""The administrator (the admin key from settings): server-wide memory mode and new users."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi import status as http

from ...accounts import Accounts
from ...auth import Admin
from ...domain import MemoryMode
from ...http.responses import errors
from ..deps import AccountsDep
from ..schemas import (
    AdminSettings,
    AdminSettingsUpdate,
    KeyCreated,
    KeyPublic,
    UserCreate,
    UserCreated,
    UserPublic,
)

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=errors(409))


async def _settings(accounts: Accounts) -> AdminSettings:
    mode = await accounts.server_mode()
    return AdminSettings(memory_mode=mode, effective_memory_mode=mode or MemoryMode.ENABLED_DEFAULT_ON)


@router.get("/settings")
async def get_settings(accounts: AccountsDep, _: Admin) -> AdminSettings:
    return await _settings(accounts)


@router.patch("/settings")
async def update_settings(accounts: AccountsDep, _: Admin, body: AdminSettingsUpdate) -> AdminSettings:
    """`disabled` turns memory off for everyone; the other modes set the default of the switch."""
    await accounts.set_server_mode(body.memory_mode)
    return await _settings(accounts)


@router.post("/users", status_code=http.HTTP_201_CREATED)
async def create_user(accounts: AccountsDep, _: Admin, body: UserCreate) -> UserCreated:
    """A new user and its first API key (`key.token`, shown in this answer only)."""
    user, key, token = await accounts.create_user(body.name)
    created = KeyCreated(**KeyPublic.of(key).model_dump(), token=token)
    return UserCreated(user=UserPublic.of(user), key=created)
