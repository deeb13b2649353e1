"""Erasing text from the PostgreSQL store's audit log: the store's purge (async, inside its
commit) and the migration that salts the log (sync). See mnemo.audit for why a digest must not
outlive its salt, and store/sqlite_events.py for the same on SQLite."""

from __future__ import annotations

import psycopg

from .. import audit
from .sqlite_rows import dump, load

_EVENTS_OF_FACT = "SELECT seq, before, after, salt FROM fact_events WHERE user_id = %s AND fact_id = %s"
_REDACT = (
    "UPDATE fact_events SET before = %s, after = %s, reason = NULL, redacted = true, salt = NULL"
    " WHERE user_id = %s AND seq = %s"
)
# what replaced the purged fact (its creation says what it replaced) and what it replaced (that
# fact's supersede event says what replaced it)
_LINKED = (
    "SELECT id, supersedes = %(fact)s FROM facts"
    " WHERE user_id = %(user)s AND (supersedes = %(fact)s OR superseded_by = %(fact)s)"
)
_REASONS = (
    "SELECT seq, fact_id, action, reason, salt FROM fact_events"
    " WHERE user_id = %s AND fact_id <> %s AND reason IS NOT NULL"
)
_REDACT_REASON = (
    "UPDATE fact_events SET reason = NULL, salt = NULL, redacted_for = %s WHERE user_id = %s AND seq = %s"
)
_HEAD_BEFORE = "SELECT hash FROM fact_events WHERE user_id = %s AND seq < %s ORDER BY seq DESC LIMIT 1"
_CHAIN_FROM = "SELECT seq, digest FROM fact_events WHERE user_id = %s AND seq >= %s ORDER BY seq"
_RESEAL = "UPDATE fact_events SET digest = %s, prev_hash = %s, hash = %s WHERE user_id = %s AND seq = %s"


async def redact_events(conn: psycopg.AsyncConnection, user_id: str, fact_id: str) -> None:
    """Erase the text, reason and salt of every event of the fact, and the reason and salt of
    the user's other events that tell of it (as store/sqlite_events.py says); events written
    before salts had digests of what is erased, so the log is sealed again from the first of
    them."""
    cur = conn.cursor()
    await cur.execute(_EVENTS_OF_FACT, (user_id, fact_id))
    rows = await cur.fetchall()
    texts = audit.texts_of([(load(before), load(after)) for _, before, after, _ in rows])
    unsalted = set()
    for seq, before, after, salt in rows:
        await cur.execute(
            _REDACT, (dump(audit.redact(load(before))), dump(audit.redact(load(after))), user_id, seq)
        )
        if salt is None:
            unsalted.add(seq)
    await cur.execute(_LINKED, {"user": user_id, "fact": fact_id})
    linked = {
        (other, "create" if replaced_it else "supersede") for other, replaced_it in await cur.fetchall()
    }
    await cur.execute(_REASONS, (user_id, fact_id))
    for seq, other, action, reason, salt in await cur.fetchall():
        if (other, action) in linked or audit.tells_of(reason, texts):
            await cur.execute(_REDACT_REASON, (fact_id, user_id, seq))
            if salt is None:
                unsalted.add(seq)
    if not unsalted:
        return
    first = min(unsalted)
    await cur.execute(_HEAD_BEFORE, (user_id, first))
    row = await cur.fetchone()
    await cur.execute(_CHAIN_FROM, (user_id, first))
    for seq, digest, prev, hashed in _sealed(await cur.fetchall(), unsalted, row):
        await cur.execute(_RESEAL, (digest, prev, hashed, user_id, seq))


def reseal(cur: psycopg.Cursor, user_id: str, replace: set[int]) -> None:
    """Give the events `replace` (seqs of the user's) random digests and chain the user's log
    again from the first of them on (the migration that salts the log)."""
    first = min(replace)
    row = cur.execute(_HEAD_BEFORE, (user_id, first)).fetchone()
    for seq, digest, prev, hashed in _sealed(
        cur.execute(_CHAIN_FROM, (user_id, first)).fetchall(), replace, row
    ):
        cur.execute(_RESEAL, (digest, prev, hashed, user_id, seq))


def _sealed(rows, replace: set[int], head_row) -> list[tuple[int, str, str, str]]:
    prev = head_row[0] if head_row else audit.GENESIS
    return audit.resealed([(seq, digest, seq in replace) for seq, digest in rows], prev)
