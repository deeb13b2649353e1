"""Erasing text from the SQLite store's audit log: shared by the store's purge and by the
migration that salts the log (see mnemo.audit for why a digest must not outlive its salt)."""

from __future__ import annotations

from .. import audit
from .sqlite_rows import dump, load


def redact_events(cur, user_id: str, fact_id: str) -> str | None:
    """Erase the text and the salt of every event of the fact. Returns the chain's new head when
    some of those events had no salt (written before salts) and the chain was sealed again."""
    rows = cur.execute(
        "SELECT seq, before, after, salt FROM fact_events WHERE user_id = ? AND fact_id = ?",
        (user_id, fact_id),
    ).fetchall()
    unsalted = set()
    for seq, before, after, salt in rows:
        cur.execute(
            "UPDATE fact_events SET before = ?, after = ?, redacted = 1, salt = NULL WHERE seq = ?",
            (dump(audit.redact(load(before))), dump(audit.redact(load(after))), seq),
        )
        if salt is None:
            unsalted.add(seq)
    return reseal(cur, user_id, unsalted) if unsalted else None


def reseal(cur, user_id: str, replace: set[int]) -> str:
    """Give the events `replace` (seqs of the user's) random digests and chain the user's log
    again from the first of them on; returns the new head."""
    first = min(replace)
    row = cur.execute(
        "SELECT hash FROM fact_events WHERE user_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
        (user_id, first),
    ).fetchone()
    rows = cur.execute(
        "SELECT seq, digest FROM fact_events WHERE user_id = ? AND seq >= ? ORDER BY seq", (user_id, first)
    ).fetchall()
    sealed = audit.resealed(
        [(seq, digest, seq in replace) for seq, digest in rows], row[0] if row else audit.GENESIS
    )
    cur.executemany(
        "UPDATE fact_events SET digest = ?, prev_hash = ?, hash = ? WHERE seq = ?",
        [(digest, prev, hashed, seq) for seq, digest, prev, hashed in sealed],
    )
    return sealed[-1][3]
