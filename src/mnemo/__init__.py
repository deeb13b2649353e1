"""mnemo: self-hostable long-term memory for personal AI assistants."""

from .domain import Category, Fact, Message, Scope, Status, Turn
from .memory import Memory
from .settings import Settings
from .sync import SyncMemory

__all__ = ["Category", "Fact", "Memory", "Message", "Scope", "Settings", "Status", "SyncMemory", "Turn"]
__version__ = "0.1.0"
