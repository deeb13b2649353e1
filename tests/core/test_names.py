"""Names a person sets are printed in tables and terminals: a control character in one is
refused (a persona keeps its lines, its other control characters left out), on both backends;
and what the CLI prints of a stored text never drives the terminal."""

from __future__ import annotations

import re

import pytest

from mnemo.cli.output import printable
from mnemo.domain import InvalidInput, Scope

ESCAPE = "\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m"


async def test_a_name_with_a_control_character_is_refused_and_a_persona_keeps_only_its_lines(memory, alice):
    accounts = memory.accounts
    with pytest.raises(InvalidInput, match=r"the agent's name holds a control character \(U\+001B\)"):
        await accounts.create_agent(alice.user_id, f"Chef{ESCAPE}")
    with pytest.raises(InvalidInput, match="the key's name holds a control character"):
        await accounts.create_api_key(alice.user_id, f"laptop{ESCAPE}")
    with pytest.raises(InvalidInput, match="the user's name holds a control character"):
        await accounts.create_user(f"mallory{ESCAPE}")
    chef = await accounts.create_agent(alice.user_id, "Chef", persona=f"You cook.\n\tBriefly.{ESCAPE}")
    assert chef.persona == "You cook.\n\tBriefly.]0;PWNED[31mRED[0m"
    with pytest.raises(InvalidInput, match="control character"):
        await accounts.update_agent(alice.user_id, chef.id, name=f"Chef{ESCAPE}")
    assert [a.name for a in await accounts.agents(alice.user_id)] == ["Chef"]


def test_what_the_cli_prints_of_a_stored_text_shows_control_characters_as_replacement_marks():
    assert printable(f"a boat{ESCAPE}\n\tnext") == "a boat\ufffd]0;PWNED\ufffd\ufffd[31mRED\ufffd[0m\n\tnext"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("a\u202eb", "invisible character (U+202E)"),  # a direction override
        ("\u200b", "invisible character (U+200B)"),  # a zero-width space, alone
        ("\ufeffbob", "invisible character (U+FEFF)"),
        ("a\u2028b", "invisible character (U+2028)"),  # a line separator
        ("   ", "is empty"),
        ("x" * 101, "longer than 100 characters"),
    ],
)
async def test_a_blank_invisible_or_overlong_name_is_refused_everywhere(memory, alice, name, said):
    accounts = memory.accounts
    bob, _, _ = await accounts.create_user("bob")
    for attempt in (
        accounts.create_user(name),
        accounts.rename_user(bob.id, name),
        accounts.create_agent(alice.user_id, name),
        accounts.create_api_key(alice.user_id, name),
    ):
        with pytest.raises(InvalidInput, match=re.escape(said)):
            await attempt
    assert [m.user.name for m in await accounts.members()] == ["alice", "bob"]
    assert (await accounts.rename_user(bob.id, "Bøb Ødegård ✓")).name == "Bøb Ødegård ✓"  # Unicode is fine


async def test_a_new_person_and_a_rename_to_the_same_name_at_once_never_share_an_account(memory):
    """Made and renamed at once, the name goes to one of them; the other is refused (Conflict),
    and a new person's key never opens someone else's account."""
    import asyncio

    from mnemo.domain import Conflict

    accounts = memory.accounts
    victim, _, _ = await accounts.create_user("victim")
    await memory.add(Scope(victim.id), "My bank PIN hint is the cat's birthday")
    for round_ in range(12):
        wanted = f"newcomer {round_}"
        made, renamed = await asyncio.gather(
            accounts.create_user(wanted), accounts.rename_user(victim.id, wanted), return_exceptions=True
        )
        assert isinstance(made, Conflict) != isinstance(renamed, Conflict), (made, renamed)
        if not isinstance(made, Conflict):
            user, _, token = made
            assert user.id != victim.id and (await accounts.authenticate(token)).id == user.id
            assert await memory.list(Scope(user.id)) == []
        holder = await accounts.existing_user(wanted)
        assert holder.id == (victim.id if isinstance(made, Conflict) else made[0].id)
    assert [k.name for k in await accounts.api_keys(victim.id)] == ["first key"]
