"""Getting back in, run where the database is: `mnemo users list` and `mnemo keys …`.

These open the configured database directly, as `mnemo users create` does: whoever can
run them can read the database file (or its URL) anyway. Keys are shown once, when made;
a listing shows their ids, labels and dates, never a secret.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..accounts import Member
from ..build import Core
from ..domain import ApiKey
from ..schemas import KeyPublic, MemberPublic
from . import output
from .options import Json
from .runtime import global_user, one_user, run_core

keys = typer.Typer(help="A user's API keys: make a new one, list them, revoke one.", no_args_is_help=True)

UserName = Annotated[
    str | None,
    typer.Option("--user", metavar="NAME", help="Whose keys (the user's name; or mnemo --user NAME keys …)."),
]


def member_json(member: Member) -> dict[str, Any]:
    """As the API's /v1/admin/users answers."""
    return MemberPublic.of(member).model_dump(mode="json")


def key_json(key: ApiKey) -> dict[str, Any]:
    """As the API answers (never a secret)."""
    return KeyPublic.of(key).model_dump(mode="json")


def list_users(ctx: typer.Context, json: bool) -> None:
    """`mnemo users list` (registered with `mnemo users`): everyone, or the global --user alone."""
    only = global_user(ctx)

    async def work(core: Core) -> list[Member]:
        if only is not None:
            await core.accounts.existing_user(only)  # an unknown name: said, not an empty list
        return [m for m in await core.accounts.members() if only is None or m.user.name == only]

    found = run_core(ctx, work)
    if json:
        output.emit_json([member_json(m) for m in found])
    elif not found:
        output.say("No users yet (mnemo users create NAME).")
    else:
        output.show(output.members_table(found))


@keys.command("create")
def keys_create(
    ctx: typer.Context,
    user: UserName = None,
    name: Annotated[str, typer.Option("--name", metavar="LABEL", help="A label for the key.")] = "recovery",
    json: Json = False,
) -> None:
    """Make a new API key for the user and print it (shown this once)."""
    whose = one_user(ctx, user, "--user")

    async def work(core: Core) -> tuple[ApiKey, str]:
        found = await core.accounts.existing_user(whose)
        return await core.accounts.create_api_key(found.id, name)

    key, token = run_core(ctx, work)
    if json:
        output.emit_json({**key_json(key), "token": token})
        return
    output.say(f"Created API key {key.id} ({key.name}) for {whose}. The key (shown once):", "green")
    typer.echo(f"  {token}")


@keys.command("list")
def keys_list(ctx: typer.Context, user: UserName = None, json: Json = False) -> None:
    """The user's keys, revoked ones included: ids, labels and dates, never the keys."""
    whose = one_user(ctx, user, "--user")

    async def work(core: Core) -> list[ApiKey]:
        found = await core.accounts.existing_user(whose)
        return await core.accounts.api_keys(found.id)

    found = run_core(ctx, work)
    if json:
        output.emit_json([key_json(k) for k in found])
        return
    output.show(output.keys_table(found))


@keys.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (see mnemo keys list).")],
    user: UserName = None,
    json: Json = False,
) -> None:
    """Revoke one of the user's keys: it stops working at once."""
    whose = one_user(ctx, user, "--user")

    async def work(core: Core) -> ApiKey:
        found = await core.accounts.existing_user(whose)
        return await core.accounts.revoke_api_key(found.id, key_id)

    key = run_core(ctx, work)
    if json:
        output.emit_json(key_json(key))
    else:
        output.say(f"Revoked API key {key.id} ({key.name}) of {whose}.", "green")
