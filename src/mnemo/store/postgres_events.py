"""Erasing text from the PostgreSQL store's audit log: the store's purge (async, inside its
commit) and the migration that salts the log (sync) run the same statements (see mnemo.audit
for why a digest must not outlive its salt)."""

from __future__ import annotations

import psycopg

from .. import audit
from .sqlite_rows import dump, load

_EVENTS_OF_FACT = "SELECT seq, before, after, salt FROM fact_events WHERE user_id = %s AND fact_id = %s"
_REDACT = (
    "UPDATE fact_events SET before = %s, after = %s, redacted = true, salt = NULL"
    " WHERE user_id = %s AND seq = %s"
)
_HEAD_BEFORE = "SELECT hash FROM fact_events WHERE user_id = %s AND seq < %s ORDER BY seq DESC LIMIT 1"
_CHAIN_FROM = "SELECT seq, digest FROM fact_events WHERE user_id = %s AND seq >= %s ORDER BY seq"
_RESEAL = "UPDATE fact_events SET digest = %s, prev_hash = %s, hash = %s WHERE user_id = %s AND seq = %s"


async def redact_events(conn: psycopg.AsyncConnection, user_id: str, fact_id: str) -> str | None:
    """Erase the text and the salt of every event of the fact. Returns the chain's new head when
    some of those events had no salt (written before salts) and the chain was sealed again."""
    cur = conn.cursor()
    await cur.execute(_EVENTS_OF_FACT, (user_id, fact_id))
    unsalted = set()
    for seq, before, after, salt in await cur.fetchall():
        await cur.execute(
            _REDACT, (dump(audit.redact(load(before))), dump(audit.redact(load(after))), user_id, seq)
        )
        if salt is None:
            unsalted.add(seq)
    if not unsalted:
        return None
    first = min(unsalted)
    await cur.execute(_HEAD_BEFORE, (user_id, first))
    row = await cur.fetchone()
    await cur.execute(_CHAIN_FROM, (user_id, first))
    sealed = _sealed(await cur.fetchall(), unsalted, row)
    for seq, digest, prev, hashed in sealed:
        await cur.execute(_RESEAL, (digest, prev, hashed, user_id, seq))
    return sealed[-1][3]


def reseal(cur: psycopg.Cursor, user_id: str, replace: set[int]) -> None:
    """Give the events `replace` (seqs of the user's) random digests and chain the user's log
    again from the first of them on (the migration that salts the log)."""
    first = min(replace)
    row = cur.execute(_HEAD_BEFORE, (user_id, first)).fetchone()
    sealed = _sealed(cur.execute(_CHAIN_FROM, (user_id, first)).fetchall(), replace, row)
    for seq, digest, prev, hashed in sealed:
        cur.execute(_RESEAL, (digest, prev, hashed, user_id, seq))


def _sealed(rows, replace: set[int], head_row) -> list[tuple[int, str, str, str]]:
    prev = head_row[0] if head_row else audit.GENESIS
    return audit.resealed([(seq, digest, seq in replace) for seq, digest in rows], prev)
