"""The recall log: which assistant was given which fact, when, through which face.

A row per fact per recall (a recall's rows share its id), written after the
reply (mnemo.recall.log_writer), several recalls of a person in one
transaction, which also deletes the user's rows past keeping (an
index probe when there are none). Whether to write is read in that transaction
from the person's switch, under the user's own lock (`Tx.lock_user`), which the
switch turned off holds too while it deletes the rows and notes when
(`users.recalls_off_at`): so none outlives it, and none of a recall from before
is written later, even once the switch is on again. Not
a row lock on `users`: on Citus, a reference table, a row lock there locks the
whole table, and two recalls' writes, whoever's, deadlocked on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ...domain import RecallRecord, RecallSummary, RecallVia
from ..rows import when
from .tx import Tx, chunks, marks

COLUMNS = "fact_id, agent_id, at, via"
RECALLED_TO_THE = timedelta(days=1)  # facts.last_recalled_at is written at most once a day
ROWS_PER_INSERT = 500  # of 6 values each: within every backend's limit on parameters


def _record(row: Sequence[Any]) -> RecallRecord:
    return RecallRecord(str(row[0]), str(row[1]) or None, when(row[2]), RecallVia(str(row[3])))


async def record(
    tx: Tx, user_id: str, found: Sequence[tuple[str, RecallRecord]], keep_after: datetime
) -> int:
    """Write these rows, each with its recall's id (unless the person's switch is off; a fact
    erased or gone meanwhile has none), and delete the user's rows at or before `keep_after`;
    how many rows were written."""
    await tx.lock_user(user_id)
    switch = await tx.one("SELECT record_recalls, recalls_off_at FROM users WHERE id = ?", (user_id,))
    await tx.execute("DELETE FROM recalls WHERE user_id = ? AND at <= ?", (user_id, keep_after))
    if switch is None or not switch[0] or not found:
        return 0
    if switch[1] is not None:  # recalls from before the switch was last turned off stay out
        off_at = when(switch[1])
        found = [(recall_id, r) for recall_id, r in found if r.at >= off_at]
    # the rows are written after the reply (mnemo.recall.log_writer): a fact erased since it
    # was recalled is the person's data no more, and no row may name it
    live: set[str] = set()
    for chunk in chunks(list(dict.fromkeys(r.fact_id for _, r in found))):
        rows = await tx.all(
            f"SELECT id FROM facts WHERE user_id = ? AND id IN ({marks(len(chunk))}) AND NOT purged",
            (user_id, *chunk),
        )
        live.update(str(row[0]) for row in rows)
    found = [(recall_id, r) for recall_id, r in found if r.fact_id in live]
    if not found:
        return 0
    # when each was last recalled, to the day (mnemo.stale): outlives the rows (however few
    # days they are kept, none included), not the switch
    last: dict[str, datetime] = {}
    for _, r in found:
        last[r.fact_id] = max(r.at, last.get(r.fact_id, r.at))
    for at in sorted(set(last.values())):
        for chunk in chunks(sorted(f for f, t in last.items() if t == at)):
            await tx.execute(
                f"UPDATE facts SET last_recalled_at = ? WHERE user_id = ? AND id IN ({marks(len(chunk))})"
                " AND (last_recalled_at IS NULL OR last_recalled_at < ?)",
                (at, user_id, *chunk, at - RECALLED_TO_THE),
            )
    kept = [(recall_id, r) for recall_id, r in found if r.at > keep_after]
    for start in range(0, len(kept), ROWS_PER_INSERT):
        rows = kept[start : start + ROWS_PER_INSERT]
        await tx.execute(
            f"INSERT INTO recalls (user_id, recall_id, {COLUMNS}) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(rows)),
            [v for i, r in rows for v in (user_id, i, r.fact_id, r.agent_id or "", r.at, str(r.via))],
        )
    return len(kept)


async def summary(tx: Tx, user_id: str, fact_id: str, since: datetime, keep_after: datetime) -> RecallSummary:
    """The fact's last recall and how many since `since` (rows past keeping left out)."""
    last = await tx.one(
        f"SELECT {COLUMNS} FROM recalls WHERE user_id = ? AND fact_id = ? AND at > ?"
        " ORDER BY at DESC, recall_id DESC LIMIT 1",
        (user_id, fact_id, keep_after),
    )
    counted = await tx.one(
        "SELECT count(*) FROM recalls WHERE user_id = ? AND fact_id = ? AND at >= ? AND at > ?",
        (user_id, fact_id, since, keep_after),
    )
    return RecallSummary(_record(last) if last else None, int(counted[0]) if counted else 0, since)


async def log(
    tx: Tx, user_id: str, keep_after: datetime, after: tuple[datetime, str, str] | None, limit: int
) -> list[tuple[str, RecallRecord]]:
    """The user's rows kept, oldest first, with their recall's id: a page of `limit` after
    the (at, recall id, fact id) of the last one of the page before."""
    page = "" if after is None else " AND (at, recall_id, fact_id) > (?, ?, ?)"
    params: list[object] = [user_id, keep_after, *(after or ())]
    rows = await tx.all(
        f"SELECT recall_id, {COLUMNS} FROM recalls WHERE user_id = ? AND at > ?{page}"
        f" ORDER BY at, recall_id, fact_id LIMIT {int(limit)}",
        params,
    )
    return [(str(r[0]), _record(r[1:])) for r in rows]


async def forget_facts(tx: Tx, user_id: str, fact_ids: Sequence[str]) -> int:
    """Delete the rows of these facts, and when each was last recalled (they are erased)."""
    gone = 0
    for chunk in chunks(list(dict.fromkeys(fact_ids))):
        gone += await tx.execute(
            f"DELETE FROM recalls WHERE user_id = ? AND fact_id IN ({marks(len(chunk))})", (user_id, *chunk)
        )
        await tx.execute(
            f"UPDATE facts SET last_recalled_at = NULL WHERE user_id = ? AND id IN ({marks(len(chunk))})",
            (user_id, *chunk),
        )
    return gone


async def forget_all(tx: Tx, user_id: str) -> int:
    """Delete all of the user's rows, and when each fact was last recalled (the switch turned
    off, or everything erased)."""
    await tx.execute(
        "UPDATE facts SET last_recalled_at = NULL WHERE user_id = ? AND last_recalled_at IS NOT NULL",
        (user_id,),
    )
    return await tx.execute("DELETE FROM recalls WHERE user_id = ?", (user_id,))
