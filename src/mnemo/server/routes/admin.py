"""The administrator (the admin key from settings): server-wide memory mode and new users."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi import status as http

from ...domain import MemoryMode
from ...http.responses import errors
from ...memory import Memory
from ..deps import Admin, MemoryDep
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


async def _settings(memory: Memory) -> AdminSettings:
    mode = await memory.server_mode()
    return AdminSettings(memory_mode=mode, effective_memory_mode=mode or MemoryMode.ENABLED_DEFAULT_ON)


@router.get("/settings")
async def get_settings(memory: MemoryDep, _: Admin) -> AdminSettings:
    return await _settings(memory)


@router.patch("/settings")
async def update_settings(memory: MemoryDep, _: Admin, body: AdminSettingsUpdate) -> AdminSettings:
    """`disabled` turns memory off for everyone; the other modes set the default of the switch."""
    await memory.set_server_mode(body.memory_mode)
    return await _settings(memory)


@router.post("/users", status_code=http.HTTP_201_CREATED)
async def create_user(memory: MemoryDep, _: Admin, body: UserCreate) -> UserCreated:
    """A new user and its first API key (`key.token`, shown in this answer only)."""
    user, key, token = await memory.create_user(body.name)
    created = KeyCreated(**KeyPublic.of(key).model_dump(), token=token)
    return UserCreated(user=UserPublic.of(user), key=created)
