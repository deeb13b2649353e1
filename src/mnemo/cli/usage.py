"""Tokens the chat model spent learning, and daily budgets: `mnemo users usage`, `mnemo users
budget` (the server's administrator, on its database)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ..accounts import Usage
from ..build import Core
from ..domain import MAX_TOKEN_BUDGET, User
from ..schemas import MemberUsage, UsagePublic
from . import output
from .runtime import global_user, one_user, run_core, usage


def usage_list(ctx: typer.Context, json: bool) -> None:
    """`mnemo users usage` (registered with `mnemo users`): everyone, or the global --user alone."""
    only = global_user(ctx)

    async def work(core: Core) -> list[tuple[User, Usage]]:
        if only is not None:
            await core.accounts.existing_user(only)  # an unknown name: said, not an empty list
        return [(u, usage) for u, usage in await core.accounts.all_usage() if only is None or u.name == only]

    found = [MemberUsage.of(user, usage) for user, usage in run_core(ctx, work)]
    if json:
        output.emit_json([m.model_dump(mode="json") for m in found])
    elif not found:
        output.say("No users yet (mnemo users create NAME).")
    else:
        output.show(_table(found))


def usage_budget(ctx: typer.Context, name: str, tokens: int | None, default: bool, json: bool) -> None:
    """`mnemo users budget` (registered with `mnemo users`)."""
    if (tokens is None) == (not default):
        usage("Give a number of tokens a day, or --default (not both).")
    one_user(ctx, name, "NAME")  # the global --user, if given, names the same person

    async def work(core: Core) -> Usage:
        user = await core.accounts.existing_user(name)
        return await core.accounts.set_token_budget(user.id, tokens)

    spent = UsagePublic.of(run_core(ctx, work))
    if json:
        output.emit_json(spent.model_dump(mode="json"))
        return
    budget = "unlimited" if spent.daily_token_budget is None else f"{spent.daily_token_budget} tokens a day"
    own = "the server's default" if spent.own_budget is None else "their own"
    output.say(f"{name}: {budget} ({own}); {spent.today.total_tokens} spent today.", "green")


def _table(found: list[MemberUsage]) -> Table:
    table = Table(box=None)
    table.add_column("name", min_width=8)
    for column in ("id", "today", "30 days", "budget", "left today", "unreported"):
        table.add_column(column, no_wrap=True)
    for m in found:
        budget = (
            "—"
            if m.daily_token_budget is None
            else f"{m.daily_token_budget}" + ("" if m.own_budget is None else " (own)")
        )
        left = "—" if m.left_today is None else str(m.left_today)
        table.add_row(
            m.name,
            m.id,
            str(m.today_tokens),
            str(m.last_30_days_tokens),
            budget,
            left,
            str(m.unreported_calls),
        )
    return table


Tokens = Annotated[
    int | None,
    typer.Argument(
        min=0,
        max=MAX_TOKEN_BUDGET,
        metavar="[TOKENS]",
        help="Tokens a day the chat model may spend for them.",
    ),
]
Default = Annotated[
    bool, typer.Option("--default", help="Back to the server's MNEMO_WRITE__DAILY_TOKEN_BUDGET.")
]
UserName = Annotated[str, typer.Argument(metavar="NAME", help="The user's name.")]
