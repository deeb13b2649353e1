"""Counts in words, the same on every face: "1 memory", "2 memories", "0 conversations"."""

from __future__ import annotations

# the nouns whose plural is not the noun and an "s"
_IRREGULAR = {"memory": "memories", "category": "categories", "entry": "entries", "copy": "copies"}


def plural(count: int, one: str, many: str | None = None) -> str:
    """`count` and the words for one thing or for several: `many`, else `one` with its last word
    made plural ("queued turn" → "queued turns", "memory" → "memories")."""
    if count == 1:
        return f"{count} {one}"
    if many is None:
        head, _, last = one.rpartition(" ")
        many = f"{head} {_IRREGULAR.get(last, last + 's')}".lstrip()
    return f"{count} {many}"
