"""backfill.py's pure part: a stored conversation cut into the turns it learns from."""

from __future__ import annotations

from mnemo.batch.backfill import turns
from mnemo.domain import Message


def test_a_conversation_is_cut_into_turns():
    at = None
    said = [
        (Message(role, "x", str(i)), at) for i, role in enumerate(["system", "user", "assistant", "user"])
    ]
    assert turns(said) == [(1, 3), (3, 4)]
    assert turns([(Message("assistant", "hi", "a"), at)]) == []
