"""gate.py: the server's memory mode and the person's switch decide whether memory is on (Khoj parity)."""

from __future__ import annotations

import pytest

from mnemo.domain import MemoryMode
from mnemo.gate import memory_enabled

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
