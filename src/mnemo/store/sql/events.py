"""Erasing text from the audit log: the stores' purge (inside their commit) and the migration
that salted the log. See mnemo.audit for why a digest must not outlive its salt."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import audit
from ..rows import dump, load
from .tx import Statements, Tx, chunks, marks


async def redact_events(tx: Tx, user_id: str, fact_ids: Sequence[str]) -> None:
    """Erase the text, reason and salt of every event of these facts, and the reason and salt of
    the user's other events that tell of one of them. Events written before salts had digests
    of what is erased, so the log is sealed again from the first of them; an event whose salt
    an earlier erasure took is not (its digest covers a salt no one has any more), so that
    the chain heads named by earlier receipts stay in the log. One pass over the log however
    many facts are erased at once (erasing everything)."""
    ids = list(dict.fromkeys(fact_ids))
    if not ids:
        return
    rows: list[Any] = []
    for chunk in chunks(ids):
        rows += await tx.all(
            "SELECT seq, fact_id, before, after, salt, redacted OR redacted_for IS NOT NULL FROM fact_events"
            f" WHERE user_id = ? AND fact_id IN ({marks(len(chunk))})",
            (user_id, *chunk),
        )
    texts: dict[str, set[str]] = {fid: set() for fid in ids}
    for _, fid, before, after, _, _ in rows:
        texts[fid] |= audit.texts_of([(load(before), load(after))])
    await tx.many(
        "UPDATE fact_events SET before = ?, after = ?, reason = NULL, redacted = ?, salt = NULL"
        " WHERE user_id = ? AND seq = ?",
        [
            (dump(audit.redact(load(before))), dump(audit.redact(load(after))), True, user_id, seq)
            for seq, _, before, after, _, _ in rows
        ],
    )
    # never salted: events written before salts, not yet erased (an erasure sealed them anew)
    unsalted = {seq for seq, _, _, _, salt, erased in rows if salt is None and not erased}
    # the other events that tell of them: the creation of what replaced one, the replacement of
    # what one replaced (their reasons say what was replaced, in whatever words), and any
    # reason that speaks of their texts (audit.tells_of)
    linked: dict[tuple[str, str], str] = {}
    erased = set(ids)
    for chunk in chunks(ids):
        for other, supersedes, superseded_by in await tx.all(
            "SELECT id, supersedes, superseded_by FROM facts WHERE user_id = ?"
            f" AND (supersedes IN ({marks(len(chunk))}) OR superseded_by IN ({marks(len(chunk))}))",
            (user_id, *chunk, *chunk),
        ):
            if supersedes in erased:
                linked[(other, "create")] = supersedes
            if superseded_by in erased:
                linked[(other, "supersede")] = superseded_by
    every_text = set().union(*texts.values())
    told: list[tuple[str, int]] = []
    for seq, other, action, reason, salt, was_erased in await tx.all(
        "SELECT seq, fact_id, action, reason, salt, redacted OR redacted_for IS NOT NULL FROM fact_events"
        " WHERE user_id = ? AND reason IS NOT NULL",
        (user_id,),
    ):
        if other in erased:
            continue
        about = linked.get((other, action))
        if about is None and audit.tells_of(reason, every_text):
            about = next(fid for fid, own in texts.items() if audit.tells_of(reason, own))
        if about is not None:
            told.append((about, seq))
            if salt is None and not was_erased:
                unsalted.add(seq)
    await tx.many(
        "UPDATE fact_events SET reason = NULL, salt = NULL, redacted_for = ? WHERE user_id = ? AND seq = ?",
        [(about, user_id, seq) for about, seq in told],
    )
    if unsalted:
        await reseal(tx, user_id, unsalted)


async def reseal(tx: Statements, user_id: str, replace: set[int]) -> None:
    """Give the events `replace` (seqs of the user's) random digests and chain the user's log
    again from the first of them on."""
    first = min(replace)
    row = await tx.one(
        "SELECT hash FROM fact_events WHERE user_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
        (user_id, first),
    )
    rows = await tx.all(
        "SELECT seq, digest FROM fact_events WHERE user_id = ? AND seq >= ? ORDER BY seq", (user_id, first)
    )
    sealed = audit.resealed(
        [(seq, digest, seq in replace) for seq, digest in rows], row[0] if row else audit.GENESIS
    )
    await tx.many(
        "UPDATE fact_events SET digest = ?, prev_hash = ?, hash = ? WHERE user_id = ? AND seq = ?",
        [(digest, prev, hashed, user_id, seq) for seq, digest, prev, hashed in sealed],
    )
