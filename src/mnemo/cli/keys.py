"""Getting back in, run where the database is: `mnemo users list` and `mnemo keys …`.

These open the configured database directly, as `mnemo users create` does: whoever can
run them can read the database file (or its URL) anyway. Keys are shown once, when made;
a listing shows their ids, labels and dates, never a secret.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from ..accounts import Member
from ..build import Core
from ..domain import ApiKey
from . import output
from .options import Json
from .runtime import run_core

keys = typer.Typer(help="A user's API keys: make a new one, list them, revoke one.", no_args_is_help=True)

UserName = Annotated[str, typer.Option("--user", metavar="NAME", help="Whose keys (the user's name).")]


def member_json(member: Member) -> dict[str, Any]:
    user = member.user
    return {
        "id": user.id,
        "name": user.name,
        "created_at": _iso(user.created_at),
        "live_keys": member.live_keys,
        "memory_enabled": member.memory_on,
    }


def key_json(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "created_at": _iso(key.created_at),
        "revoked_at": _iso(key.revoked_at),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def list_users(ctx: typer.Context, json: bool) -> None:
    """`mnemo users list` (registered with `mnemo users`)."""

    async def work(core: Core) -> list[Member]:
        return await core.accounts.members()

    found = run_core(ctx, work)
    if json:
        output.emit_json([member_json(m) for m in found])
    elif not found:
        output.say("No users yet (mnemo users create NAME).")
    else:
        output.stdout().print(output.members_table(found))


@keys.command("create")
def keys_create(
    ctx: typer.Context,
    user: UserName,
    name: Annotated[str, typer.Option("--name", metavar="LABEL", help="A label for the key.")] = "recovery",
    json: Json = False,
) -> None:
    """Make a new API key for the user and print it (shown this once)."""

    async def work(core: Core) -> tuple[ApiKey, str]:
        found = await core.accounts.existing_user(user)
        return await core.accounts.create_api_key(found.id, name)

    key, token = run_core(ctx, work)
    if json:
        output.emit_json({**key_json(key), "token": token})
        return
    output.say(f"Created API key {key.id} ({key.name}) for {user}. The key (shown once):", "green")
    typer.echo(f"  {token}")


@keys.command("list")
def keys_list(ctx: typer.Context, user: UserName, json: Json = False) -> None:
    """The user's keys, revoked ones included: ids, labels and dates, never the keys."""

    async def work(core: Core) -> list[ApiKey]:
        found = await core.accounts.existing_user(user)
        return await core.accounts.api_keys(found.id)

    found = run_core(ctx, work)
    if json:
        output.emit_json([key_json(k) for k in found])
        return
    output.stdout().print(output.keys_table(found))


@keys.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (see mnemo keys list).")],
    user: UserName,
    json: Json = False,
) -> None:
    """Revoke one of the user's keys: it stops working at once."""

    async def work(core: Core) -> ApiKey:
        found = await core.accounts.existing_user(user)
        return await core.accounts.revoke_api_key(found.id, key_id)

    key = run_core(ctx, work)
    if json:
        output.emit_json(key_json(key))
    else:
        output.say(f"Revoked API key {key.id} ({key.name}) of {user}.", "green")
