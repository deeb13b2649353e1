"""A turn's learning in words: its state, why (a category), and what it taught memory, as
Activity lists it and as Try it's "Memory updated" says it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from ..domain import NotFound, Scope, StoredTurn, dropped_words
from ..memory import Memory

STATES = {
    "queued": "Waiting its turn to be learnt from",
    "learning": "Being learnt from now",
    "learnt": "Learnt",
    "waiting_for_model": "Waiting for a chat model: only what you asked to be remembered was learnt",
    "failed": "Failed",
    "skipped": "Not learnt from",
    "over_budget": "Over your daily token budget: learnt after",
}
REASONS = {
    "model_unreachable": "the chat model could not be reached",
    "invalid_reply": "the chat model's reply could not be read",
    "timeout": "the chat model took too long to answer",
    "refused_by_policy": "the chat model refused the request",
    "internal": "an error in mnemo (the server's log has the details)",
    "automation": "it came from an automation",
    "memory_off": "memory was off",
    "agent_deleted": "its assistant was deleted",
}
# what a turn did to memory (domain.FACT_KINDS), in the order and the words a person reads
KINDS = (
    ("created", "Learnt"),
    ("updated", "Updated"),
    ("superseded", "Corrected (this one was replaced)"),
    ("held", "Held for review"),
    ("reinforced", "Confirmed again"),
    ("retracted", "Retracted"),
)
NEW = {"created": "", "updated": "updated", "held": "held for review", "retracted": "retracted"}
SETTLED = ("learnt", "waiting_for_model", "failed", "skipped", "over_budget")


def said(turn: StoredTurn) -> str:
    """The turn's state in a sentence."""
    words = STATES[turn.state]
    if turn.learn_at is not None:
        words += turn.learn_at.strftime(" %Y-%m-%d %H:%M UTC")
    if turn.reason:
        words += f": {REASONS.get(turn.reason, turn.reason)}"
    return words + (" (tried again)" if turn.state == "queued" and turn.reason else "") + "."


def dropped(turn: StoredTurn) -> str | None:
    """What of the chat model's reply the turn did not keep, and why; None when it kept all."""
    if not turn.dropped:
        return None
    return f"Not kept from the chat model's reply: {dropped_words(turn.dropped, total=False)}."


def kinds(turn: StoredTurn) -> list[tuple[str, str, list[str]]]:
    """(kind, its words, fact ids) of what the turn did, kinds it did nothing of left out."""
    return [(kind, words, turn.facts[kind]) for kind, words in KINDS if turn.facts.get(kind)]


@dataclass(frozen=True, slots=True)
class Note:
    """Try it's line under a reply: what its turn taught, once learning settled."""

    turn: StoredTurn
    learnt: tuple[tuple[str, str | None, str], ...]  # (fact id, its words or None if erased, how)

    @property
    def settled(self) -> bool:
        return self.turn.state in SETTLED

    @property
    def said(self) -> str:
        return said(self.turn)


async def note(memory: Memory, scope: Scope, turn: StoredTurn) -> Note:
    """The facts the turn created, updated, held or retracted, with their words."""
    learnt = []
    for kind, how in NEW.items():
        for fact_id in turn.facts.get(kind, ()):
            words = None
            with contextlib.suppress(NotFound):
                fact = await memory.get(scope, fact_id)
                words = None if fact.purged else fact.text
            learnt.append((fact_id, words, how))
    return Note(turn, tuple(learnt))
