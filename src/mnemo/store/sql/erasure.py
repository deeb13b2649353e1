"""What an erasure takes beside its facts' texts (see domain.Erasure): messages, whole
conversations, the keyed hashes of erased texts, and the signed receipts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ... import audit
from ...domain import Conflict, ErasedMeanwhile, Erasure, LearntFrom, Receipt, Source, says
from ..rows import dump, load, when
from . import conversations
from .tx import Row, Tx, chunks, marks


async def messages_with_words(
    tx: Tx, user_id: str, phrases: Sequence[Sequence[str]], after: Any, limit: int
) -> list[Row]:
    """A page of the person's messages not erased whose words hold one of the phrases (see
    Tx.messages_with_words): (key, created at, conversation id, id, content)."""
    return await tx.messages_with_words(user_id, phrases, after, limit)


async def messages_after(
    tx: Tx, user_id: str, phrases: Sequence[Sequence[str]], after: Any, limit: int
) -> list[Row]:
    """A page of all the person's messages not erased, by id after `after` (None: from the
    first), for a text with no words to look up: (id, created at, conversation id, id, content)."""
    later, params = ("", ()) if after is None else (" AND id > ?", (after,))
    return await tx.all(
        "SELECT id, created_at, conversation_id, id, content FROM messages"
        f" WHERE user_id = ? AND erased_at IS NULL{later} ORDER BY id LIMIT ?",
        (user_id, *params, limit),
    )


def saying(rows: Sequence[Row], texts: Sequence[str]) -> list[Row]:
    """Those of the rows (content last) whose content says one of `texts` in the same words
    (domain.says: whole words, case and spacing aside)."""
    return [r for r in rows if any(says(r[-1], t) for t in texts)]


async def _messages(tx: Tx, user_id: str, columns: str, ids: Sequence[str]) -> list[Any]:
    """`columns` of those of the user's messages, erased or not, CHUNK ids a statement."""
    out: list[Any] = []
    for chunk in chunks(ids):
        out += await tx.all(
            f"SELECT {columns} FROM messages WHERE user_id = ? AND id IN ({marks(len(chunk))})",
            (user_id, *chunk),
        )
    return out


async def messages_named(tx: Tx, user_id: str, ids: Sequence[str]) -> list[tuple[str, str, str]]:
    """(conversation id, message id, content) of those of the user's messages, erased or not."""
    return await _messages(tx, user_id, "conversation_id, id, content", ids)


async def message_places(tx: Tx, user_id: str, ids: Sequence[str]) -> list[tuple[str, str, Any, Any]]:
    """(message id, role, created at, erased at) of those of the user's messages."""
    return await _messages(tx, user_id, "id, role, created_at, erased_at", ids)


async def conversation_message_ids(tx: Tx, user_id: str, conversation_id: str) -> list[str] | None:
    """The ids of the conversation's messages; None when the user has no such conversation."""
    if (
        await tx.one("SELECT 1 FROM conversations WHERE user_id = ? AND id = ?", (user_id, conversation_id))
        is None
    ):
        return None
    rows = await tx.all(
        "SELECT id FROM messages WHERE user_id = ? AND conversation_id = ?", (user_id, conversation_id)
    )
    return [mid for (mid,) in rows]


async def scrub_jobs(tx: Tx, user_id: str, erasure: Erasure) -> int:
    """Take the problems and the last error (which may quote what was said, or what the model
    made of it) from the user's jobs of the erased messages, and from any that quote an erased
    text; how many jobs were scrubbed."""
    gone = set(erasure.messages)
    scrubbed = []
    for job_id, message_ids, result, last_error in await tx.all(
        "SELECT id, message_ids, result, last_error FROM jobs WHERE user_id = ?"
        " AND (result IS NOT NULL OR last_error IS NOT NULL)",
        (user_id,),
    ):
        result = load(result) or {}
        quoted = " ".join([*map(str, result.get("problems") or []), last_error or ""])
        if gone & set(load(message_ids) or []) or (quoted.strip() and audit.tells_of(quoted, erasure.texts)):
            scrubbed.append((tx.json({**result, "problems": []}) if result else None, user_id, job_id))
    await tx.many("UPDATE jobs SET result = ?, last_error = NULL WHERE user_id = ? AND id = ?", scrubbed)
    return len(scrubbed)


async def conversation_ids(tx: Tx, user_id: str) -> list[str]:
    rows = await tx.all("SELECT id FROM conversations WHERE user_id = ? ORDER BY created_at, id", (user_id,))
    return [cid for (cid,) in rows]


async def erase(tx: Tx, user_id: str, erasure: Erasure, at: datetime) -> dict[str, int]:
    """Everything but the facts: how many messages, conversations, jobs and backfill marks went."""
    counts = {"messages": 0, "conversations": 0, "jobs": 0, "backfill_marks": 0, "keys": 0}
    for chunk in chunks(erasure.messages):
        counts["messages"] += await tx.execute(
            "UPDATE messages SET content = '', erased_at = ?, words = NULL"
            f" WHERE user_id = ? AND id IN ({marks(len(chunk))}) AND erased_at IS NULL",
            (at, user_id, *chunk),
        )
    for cid in erasure.conversations:
        counts["jobs"] += await tx.execute(
            "DELETE FROM jobs WHERE user_id = ? AND conversation_id = ?", (user_id, cid)
        )
        counts["backfill_marks"] += await tx.execute(
            "DELETE FROM backfill_progress WHERE user_id = ? AND conversation_id = ?", (user_id, cid)
        )
        counts["messages"] += await tx.execute(
            "DELETE FROM messages WHERE user_id = ? AND conversation_id = ?", (user_id, cid)
        )
        quiet = not await conversations.remembered(tx, user_id, cid)
        counts["conversations"] += await tx.execute(
            "DELETE FROM conversations WHERE user_id = ? AND id = ?", (user_id, cid)
        )
        if quiet and not erasure.keys:  # not remembered: its id keeps the person's switch, and no more
            await conversations.set_remember(tx, user_id, cid, None, False, at)
    counts["jobs_scrubbed"] = await scrub_jobs(tx, user_id, erasure)
    if erasure.keys:  # everything
        counts["keys"] = await tx.execute(
            "DELETE FROM api_keys WHERE user_id = ? AND id <> ?", (user_id, erasure.keep_key or "")
        )
        await tx.execute(
            "UPDATE api_keys SET name = ? WHERE user_id = ? AND id = ?",
            (KEPT_KEY, user_id, erasure.keep_key or ""),
        )
        counts["agents"] = await tx.execute(
            "UPDATE agents SET name = 'erased ' || id, persona = NULL, upstream_model = NULL,"
            " deleted_at = COALESCE(deleted_at, ?) WHERE user_id = ?",
            (at, user_id),
        )
        await scrub_sources(tx, user_id)
    await tx.many(
        "INSERT INTO erased_texts (user_id, hash, erased_at) VALUES (?, ?, ?)"
        " ON CONFLICT (user_id, hash) DO NOTHING",
        [(user_id, h, at) for h in dict.fromkeys(erasure.forget)],
    )
    return counts


KEPT_KEY = "kept when everything was erased"  # the label of the key an erasure of everything keeps


def scrubbed(source: dict[str, Any] | None) -> dict[str, Any] | None:
    """A fact's source as JSON, scrubbed (domain.Source.scrubbed)."""
    return Source.from_json(source).scrubbed().to_json() if source else source


async def scrub_sources(tx: Tx, user_id: str) -> None:
    """Where each of the person's facts came from (conversation ids they chose, message ids, an
    imported record's id), in the fact and in its earlier events' snapshots (all redacted by
    then: every fact was purged; the purges' own events were written without it, see
    Eraser.erase): an erasure of everything."""
    rows = await tx.all("SELECT id, source FROM facts WHERE user_id = ?", (user_id,))
    await tx.many(
        "UPDATE facts SET source = ? WHERE user_id = ? AND id = ?",
        [(tx.json(scrubbed(load(source))), user_id, fid) for fid, source in rows],
    )

    def without(snapshot: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if snapshot is None else {**snapshot, "source": scrubbed(snapshot.get("source"))}

    events = await tx.all(
        "SELECT seq, before, after FROM fact_events WHERE user_id = ? AND redacted", (user_id,)
    )
    await tx.many(
        "UPDATE fact_events SET before = ?, after = ? WHERE user_id = ? AND seq = ?",
        [(dump(without(load(b))), dump(without(load(a))), user_id, seq) for seq, b, a in events],
    )


async def check_not_erased_since(tx: Tx, user_id: str, conversation_id: str, since: datetime) -> None:
    """ErasedMeanwhile when one of the person's erasures at or after `since` (by its receipt) took
    the conversation, or everything."""
    for kind, body in await tx.all(
        "SELECT kind, body FROM receipts WHERE user_id = ? AND at >= ?", (user_id, since)
    ):
        taken = (load(body) or {}).get("erased", {}).get("conversations") or []
        if kind == "everything" or conversation_id in taken:
            raise ErasedMeanwhile(
                "you erased this conversation (or all of your data) while the reply was coming:"
                " the turn was not stored"
            )


async def check_unerased(tx: Tx, user_id: str, learnt: LearntFrom) -> None:
    """Conflict when a text or a message the batch rests on was erased (see LearntFrom)."""
    if learnt.texts and await erased(tx, user_id, learnt.texts):
        raise Conflict("what it would learn was erased meanwhile")
    cited = list(dict.fromkeys(learnt.messages))
    here = 0
    for chunk in chunks(cited):
        row = await tx.one(
            f"SELECT count(*) FROM messages WHERE user_id = ? AND id IN ({marks(len(chunk))})"
            " AND erased_at IS NULL",
            (user_id, *chunk),
        )
        here += int(row[0]) if row else 0
    if here != len(cited):
        raise Conflict("a message it was learnt from was erased meanwhile")


async def erased(tx: Tx, user_id: str, hashes: Sequence[str]) -> set[str]:
    """Those of `hashes` that are of texts the user erased."""
    found: set[str] = set()
    unique = list(dict.fromkeys(hashes))
    for chunk in chunks(unique):
        rows = await tx.all(
            f"SELECT hash FROM erased_texts WHERE user_id = ? AND hash IN ({marks(len(chunk))})",
            (user_id, *chunk),
        )
        found.update(h for (h,) in rows)
    return found


async def unforget(tx: Tx, user_id: str, hashes: Sequence[str]) -> None:
    """The person wrote these texts themselves again: they may be learnt again."""
    for chunk in chunks(list(hashes)):
        await tx.execute(
            f"DELETE FROM erased_texts WHERE user_id = ? AND hash IN ({marks(len(chunk))})", (user_id, *chunk)
        )


RECEIPT_COLUMNS = "id, user_id, at, kind, body, signature"


def receipt_from(row: Sequence[Any]) -> Receipt:
    return Receipt(row[0], row[1], when(row[2]), row[3], load(row[4]), row[5])


async def save_receipt(tx: Tx, r: Receipt) -> None:
    await tx.execute(
        f"INSERT INTO receipts ({RECEIPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        (r.id, r.user_id, r.at, r.kind, tx.json(r.body), r.signature),
    )


async def receipts(tx: Tx, user_id: str, limit: int, offset: int) -> list[Receipt]:
    rows = await tx.all(
        f"SELECT {RECEIPT_COLUMNS} FROM receipts WHERE user_id = ? ORDER BY at DESC, id DESC"
        f" LIMIT {int(limit)} OFFSET {int(offset)}",
        (user_id,),
    )
    return [receipt_from(r) for r in rows]


async def receipt(tx: Tx, user_id: str, receipt_id: str) -> Receipt | None:
    row = await tx.one(
        f"SELECT {RECEIPT_COLUMNS} FROM receipts WHERE user_id = ? AND id = ?", (user_id, receipt_id)
    )
    return None if row is None else receipt_from(row)
