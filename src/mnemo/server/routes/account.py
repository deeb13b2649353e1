"""You: the memory switch and review policy (Khoj's config payload), and your API keys."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi import status as http

from ...accounts import Accounts
from ...auth import CurrentUser
from ...domain import GateAction, MemoryMode, Sensitive, User
from ...gate import memory_enabled
from ...http.responses import errors
from ...schemas import KeyCreate, KeyCreated, KeyPublic, MePublic, MeSettingsUpdate, UsagePublic, UserPublic
from ..deps import AccountsDep
from ..params import KeyIdPath

router = APIRouter(prefix="/v1/me", tags=["account"], responses=errors(404))


async def _me(accounts: Accounts, user: User) -> MePublic:
    mode = await accounts.server_mode()
    return MePublic(
        user=UserPublic.of(user),
        enable_memory=memory_enabled(mode, user.memory_enabled),
        memory_enabled=user.memory_enabled,
        server_memory_mode=mode or MemoryMode.ENABLED_DEFAULT_ON,
        review_policy=user.review_policy,
        record_recalls=user.record_recalls,
        review_stale=user.review_stale,
        sensitive_gate={Sensitive(k): GateAction(a) for k, a in user.gate.actions().items()},
    )


@router.get("")
async def me(accounts: AccountsDep, user: CurrentUser) -> MePublic:
    """Whether memory is on for you, and why: the server mode and your switch."""
    return await _me(accounts, user)


@router.patch("/settings")
async def update_settings(accounts: AccountsDep, user: CurrentUser, body: MeSettingsUpdate) -> MePublic:
    """Your switch (true, false, or null to follow the server mode), review policy, whether
    recalls are recorded (false deletes what was recorded), whether the "Still true?" list is
    offered, and the sensitive-data gate's action for some categories."""
    if "memory_enabled" in body.model_fields_set:
        user = await accounts.set_user_switch(user.id, body.memory_enabled)
    if body.review_policy is not None:
        user = await accounts.set_review_policy(user.id, body.review_policy)
    if body.record_recalls is not None:
        user = await accounts.set_record_recalls(user.id, body.record_recalls)
    if body.review_stale is not None:
        user = await accounts.set_review_stale(user.id, body.review_stale)
    if body.sensitive_gate is not None:
        user = await accounts.set_gate(user.id, {str(k): str(a) for k, a in body.sensitive_gate.items()})
    return await _me(accounts, user)


@router.get("/usage")
async def usage(accounts: AccountsDep, user: CurrentUser) -> UsagePublic:
    """The tokens the chat model spent learning from your turns, today and each of the last 30
    UTC days, your daily budget and what is left of it today. Once today's budget is spent,
    your turns wait `over_budget` and are learnt after `resets_at` (the next UTC midnight)."""
    return UsagePublic.of(await accounts.usage(user.id))


@router.get("/keys")
async def list_keys(accounts: AccountsDep, user: CurrentUser) -> list[KeyPublic]:
    """Your keys, revoked ones included; never the keys themselves."""
    return [KeyPublic.of(k) for k in await accounts.api_keys(user.id)]


@router.post("/keys", status_code=http.HTTP_201_CREATED)
async def create_key(accounts: AccountsDep, user: CurrentUser, body: KeyCreate) -> KeyCreated:
    """A new key; `token` is shown in this answer only."""
    key, token = await accounts.create_api_key(user.id, body.name)
    return KeyCreated.made(key, token)


@router.delete("/keys/{key_id}")
async def revoke_key(accounts: AccountsDep, user: CurrentUser, key_id: KeyIdPath) -> KeyPublic:
    """Revoke a key: it stops working at once (this one too, if you use it)."""
    return KeyPublic.of(await accounts.revoke_api_key(user.id, key_id))
