"""The administrator (the admin key from settings): server-wide memory mode, the users, and
their keys (a person who lost theirs gets a new one here)."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi import status as http

from ...accounts import Accounts
from ...auth import Admin
from ...domain import MemoryMode
from ...http.responses import errors
from ...schemas import (
    AdminSettings,
    AdminSettingsUpdate,
    BudgetUpdate,
    KeyCreate,
    KeyCreated,
    KeyPublic,
    MemberPublic,
    MemberUsage,
    UsagePublic,
    UserCreate,
    UserCreated,
    UserPublic,
    UserUpdate,
)
from ..deps import AccountsDep
from ..params import KeyIdPath, UserIdPath

log = logging.getLogger("mnemo.admin")
router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=errors(404, 409))


async def _settings(accounts: Accounts) -> AdminSettings:
    mode = await accounts.server_mode()
    return AdminSettings(memory_mode=mode, effective_memory_mode=mode or MemoryMode.ENABLED_DEFAULT_ON)


@router.get("/settings")
async def get_settings(accounts: AccountsDep, _: Admin) -> AdminSettings:
    """The server's memory mode as set (null: unset) and as it applies."""
    return await _settings(accounts)


@router.patch("/settings")
async def update_settings(accounts: AccountsDep, _: Admin, body: AdminSettingsUpdate) -> AdminSettings:
    """`disabled` turns memory off for everyone; the other modes set the default of the switch."""
    await accounts.set_server_mode(body.memory_mode)
    log.info("admin: set the server's memory mode to %s", body.memory_mode or "unset")
    return await _settings(accounts)


@router.post("/users", status_code=http.HTTP_201_CREATED)
async def create_user(accounts: AccountsDep, _: Admin, body: UserCreate) -> UserCreated:
    """A new user and its first API key (`key.token`, shown in this answer only)."""
    user, key, token = await accounts.create_user(body.name)
    log.info("admin: created user %s with key %s", user.id, key.id)
    created = KeyCreated.made(key, token)
    return UserCreated(user=UserPublic.of(user), key=created)


@router.get("/users")
async def list_users(accounts: AccountsDep, _: Admin) -> list[MemberPublic]:
    """Everyone, in name order, with how many live keys they have and whether memory is on."""
    return [MemberPublic.of(m) for m in await accounts.members()]


@router.get("/users/{user_id}")
async def get_user(accounts: AccountsDep, _: Admin, user_id: UserIdPath) -> MemberPublic:
    """One person as the list shows them: keys, memory switch, disabled, turns in the queue."""
    user = await accounts.existing_user_by_id(user_id)
    return MemberPublic.of(await accounts.member(user, await accounts.server_mode()))


@router.patch("/users/{user_id}")
async def update_user(accounts: AccountsDep, _: Admin, user_id: UserIdPath, body: UserUpdate) -> MemberPublic:
    """Rename a person (409 for a name someone has; the CLI's `--user` and MNEMO_USER name
    people, so they take the new name), or disable the account (`disabled: true`: every key of
    it answered 403 until it is enabled; nothing stored goes, and turns already accepted are
    still learnt from) or enable it. Logged without the name."""
    user = await accounts.existing_user_by_id(user_id)
    if body.name is not None and body.name != user.name:
        user = await accounts.rename_user(user.id, body.name)
        log.info("admin: renamed user %s", user.id)
    if body.disabled is not None:
        user = await accounts.set_disabled(user.id, body.disabled)
        log.info("admin: %s user %s", "disabled" if body.disabled else "enabled", user.id)
    return MemberPublic.of(await accounts.member(user, await accounts.server_mode()))


@router.get("/users/{user_id}/keys")
async def list_user_keys(accounts: AccountsDep, _: Admin, user_id: UserIdPath) -> list[KeyPublic]:
    """The user's keys, revoked ones included; never the keys themselves."""
    user = await accounts.existing_user_by_id(user_id)
    return [KeyPublic.of(k) for k in await accounts.api_keys(user.id)]


@router.post("/users/{user_id}/keys", status_code=http.HTTP_201_CREATED)
async def create_user_key(
    accounts: AccountsDep, _: Admin, user_id: UserIdPath, body: KeyCreate
) -> KeyCreated:
    """A new key for the user (who lost theirs); `token` is shown in this answer only."""
    user = await accounts.existing_user_by_id(user_id)
    key, token = await accounts.create_api_key(user.id, body.name)
    log.info("admin: created key %s for user %s", key.id, user.id)
    return KeyCreated.made(key, token)


@router.delete("/users/{user_id}/keys/{key_id}")
async def revoke_user_key(
    accounts: AccountsDep, _: Admin, user_id: UserIdPath, key_id: KeyIdPath
) -> KeyPublic:
    """Revoke one of the user's keys: it stops working at once. Another user's key: 404."""
    user = await accounts.existing_user_by_id(user_id)
    revoked = await accounts.revoke_api_key(user.id, key_id)
    log.info("admin: revoked key %s of user %s", revoked.id, user.id)
    return KeyPublic.of(revoked)


@router.get("/usage")
async def list_usage(accounts: AccountsDep, _: Admin) -> list[MemberUsage]:
    """Everyone's tokens spent learning, today and in the last 30 UTC days, in name order,
    with the daily budget that applies to each."""
    return [MemberUsage.of(user, usage) for user, usage in await accounts.all_usage()]


@router.put("/users/{user_id}/budget")
async def set_user_budget(
    accounts: AccountsDep, _: Admin, user_id: UserIdPath, body: BudgetUpdate
) -> UsagePublic:
    """The user's own daily token budget (null: the server's default); their turns waiting
    over budget are looked at again at once. The user's usage, as they read it."""
    usage = await accounts.set_token_budget(user_id, body.daily_token_budget)
    log.info("admin: set the daily budget of user %s to %s", user_id, body.daily_token_budget)
    return UsagePublic.of(usage)
