"""Names a person sets are printed in tables and terminals: a control character in one is
refused (a persona keeps its lines, its other control characters left out), on both backends;
and what the CLI prints of a stored text never drives the terminal."""

from __future__ import annotations

import pytest

from mnemo.cli.output import printable
from mnemo.domain import InvalidInput

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
