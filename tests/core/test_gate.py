"""Khoj parity: server memory mode x the person's switch, through remember and recall."""

from __future__ import annotations

import pytest

from mnemo.domain import MemoryMode, Scope, Turn
from mnemo.gate import memory_enabled
from tests.helpers import texts

NONE = None
CASES = [
    # server mode, user switch, memory on?
    (NONE, None, True),
    (NONE, True, True),
    (NONE, False, False),
    (MemoryMode.DISABLED, None, False),
    (MemoryMode.DISABLED, True, False),
    (MemoryMode.DISABLED, False, False),
    (MemoryMode.ENABLED_DEFAULT_OFF, None, False),
    (MemoryMode.ENABLED_DEFAULT_OFF, True, True),
    (MemoryMode.ENABLED_DEFAULT_OFF, False, False),
    (MemoryMode.ENABLED_DEFAULT_ON, None, True),
    (MemoryMode.ENABLED_DEFAULT_ON, True, True),
    (MemoryMode.ENABLED_DEFAULT_ON, False, False),
]


@pytest.mark.parametrize(("mode", "switch", "expected"), CASES)
def test_rule(mode, switch, expected):
    assert memory_enabled(mode, switch) is expected


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
