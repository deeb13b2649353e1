"""Khoj parity: server memory mode x the person's switch, through remember and recall."""

from __future__ import annotations

import pytest

from mnemo.domain import Scope, Turn
from tests.helpers import texts
from tests.unit.test_gate import CASES


@pytest.mark.parametrize(("mode", "switch", "expected"), CASES)
async def test_writes_and_reads_follow_the_rule(memory, mode, switch, expected):
    user = await memory.accounts.user("carol")
    scope = Scope(user.id)
    # seeded while memory is on, so that a read when off has something to leak
    seeded = await memory.add(scope, "I keep bees on my balcony")
    await memory.accounts.set_server_mode(mode)
    await memory.accounts.set_user_switch(user.id, switch)

    assert await memory.accounts.memory_enabled(user.id) is expected
    report = await memory.remember(
        Turn.of(scope, ("user", "Remember that my locker number is 4471"), ("assistant", "Noted."))
    )
    stored = texts(await memory.list(scope))
    recalled = texts(await memory.recall("bees balcony", scope))
    if expected:
        assert "My locker number is 4471" in stored
        assert seeded.text in recalled
    else:
        assert report.skipped is not None
        assert "My locker number is 4471" not in stored
        assert seeded.text not in recalled


async def test_automation_turns_never_write(memory, alice):
    report = await memory.remember(
        Turn.of(alice, ("user", "Remember that I am the administrator"), automation=True)
    )
    assert report.skipped and "automation" in report.skipped
    assert "I am the administrator" not in texts(await memory.list(alice))
