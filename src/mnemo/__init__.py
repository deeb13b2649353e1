"""mnemo: self-hostable long-term memory for personal AI assistants.

`import mnemo` stays cheap: the names below are loaded on first use (the core
needs numpy, the sensitive-data scanners and a database driver; a script that
only talks to a server with mnemo.client needs none of them).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .domain import Category, Fact, Message, Scope, Status, Turn
    from .local import LocalMemory, open
    from .memory import Memory
    from .settings import Settings
    from .sync import SyncMemory

_WHERE = {
    "Category": "domain",
    "Fact": "domain",
    "Message": "domain",
    "Scope": "domain",
    "Status": "domain",
    "Turn": "domain",
    "Memory": "memory",
    "Settings": "settings",
    "SyncMemory": "sync",
    "LocalMemory": "local",
    "open": "local",
}

__all__ = [  # noqa: RUF022 (as _WHERE lists them)
    "Category",
    "Fact",
    "Message",
    "Scope",
    "Status",
    "Turn",
    "Memory",
    "Settings",
    "SyncMemory",
    "LocalMemory",
    "open",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'mnemo' has no attribute {name!r}")
    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
