"""Is memory on for this turn? The server mode and the person's switch decide together."""

from __future__ import annotations

from .domain import MemoryMode


def memory_enabled(server_mode: MemoryMode | None, user_switch: bool | None) -> bool:
    """Khoj's rule: `disabled` overrides everyone; otherwise the person's switch wins,
    and when they never set it the server's default (on when no mode is set) applies."""
    if server_mode == MemoryMode.DISABLED:
        return False
    if user_switch is not None:
        return user_switch
    return server_mode != MemoryMode.ENABLED_DEFAULT_OFF
