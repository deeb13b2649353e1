"""What an import did (or, with --dry-run, found): the summary `mnemo import --json` prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from ...domain import MnemoError


class ImportRefused(MnemoError):
    """The import cannot go where it was asked to (the user there, or the data there)."""

    code = "import_refused"


# progress: (stage, how many more are done, how many there are in all)
Step = Callable[[str, int, int], None]


def no_step(stage: str, advance: int, total: int) -> None:
    return None


@dataclass
class ImportReport:
    format: str
    user: str
    dry_run: bool = False
    user_created: bool = False
    agents: int = 0  # found in the file
    agents_added: int = 0
    conversations: int = 0
    conversations_added: int = 0
    conversations_present: int = 0  # imported before: nothing new in them
    conversations_empty: int = 0  # no user or assistant message with text: left out
    messages_added: int = 0
    facts: int = 0
    facts_added: int = 0
    facts_present: int = 0
    events: int = 0
    events_added: int = 0
    re_embedded: int = 0  # facts whose vectors were made by another model than the one here
    forgotten: int = 0  # facts and messages the person erased before: left out
    blocked: int = 0  # facts holding what the person's sensitive-data gate never stores: left out
    held: int = 0  # facts that read as instructions to an assistant: kept for the person's review
    audit_ok: bool | None = None
    users: list[str] = field(default_factory=list)  # whom a file's facts went to (mem0: many)
    said_from: datetime | None = None  # the oldest user message of the file's conversations

    def said(self, at: datetime) -> None:
        if self.said_from is None or at < self.said_from:
            self.said_from = at

    def found(self, **counts: int) -> None:
        for name, n in counts.items():
            setattr(self, name, n)

    def conversation(self, added_messages: int) -> None:
        if added_messages:
            self.conversations_added += 1
            self.messages_added += added_messages
        else:
            self.conversations_present += 1

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "said_from": self.said_from.isoformat() if self.said_from else None}
