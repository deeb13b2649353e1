"""Erasing text from the audit log: the stores' purge (inside their commit) and the migration
that salted the log. See mnemo.audit for why a digest must not outlive its salt."""

from __future__ import annotations

from ... import audit
from ..rows import dump, load
from .tx import Statements, Tx


async def redact_events(tx: Tx, user_id: str, fact_id: str) -> None:
    """Erase the text, reason and salt of every event of the fact, and the reason and salt of
    the user's other events that tell of it; events written before salts had digests of what
    is erased, so the log is sealed again from the first of them."""
    rows = await tx.all(
        "SELECT seq, before, after, salt FROM fact_events WHERE user_id = ? AND fact_id = ?",
        (user_id, fact_id),
    )
    texts = audit.texts_of([(load(before), load(after)) for _, before, after, _ in rows])
    unsalted = set()
    for seq, before, after, salt in rows:
        await tx.execute(
            "UPDATE fact_events SET before = ?, after = ?, reason = NULL, redacted = ?, salt = NULL"
            " WHERE user_id = ? AND seq = ?",
            (dump(audit.redact(load(before))), dump(audit.redact(load(after))), True, user_id, seq),
        )
        if salt is None:
            unsalted.add(seq)
    # the other events that tell of it: the creation of what replaced it, the replacement of
    # what it replaced (their reasons say what was replaced, in whatever words), and any
    # reason that speaks of its texts (audit.tells_of)
    linked = {
        (other, "create" if replaced_it else "supersede")
        for other, replaced_it in await tx.all(
            "SELECT id, supersedes = ? FROM facts WHERE user_id = ? AND (supersedes = ? OR"
            " superseded_by = ?)",
            (fact_id, user_id, fact_id, fact_id),
        )
    }
    others = await tx.all(
        "SELECT seq, fact_id, action, reason, salt FROM fact_events"
        " WHERE user_id = ? AND fact_id <> ? AND reason IS NOT NULL",
        (user_id, fact_id),
    )
    for seq, other, action, reason, salt in others:
        if (other, action) in linked or audit.tells_of(reason, texts):
            await tx.execute(
                "UPDATE fact_events SET reason = NULL, salt = NULL, redacted_for = ? WHERE user_id = ? AND"
                " seq = ?",
                (fact_id, user_id, seq),
            )
            if salt is None:
                unsalted.add(seq)
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
