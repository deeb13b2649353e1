"""The person's conversations as their list shows them: the statement both stores share."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...domain import UNSET, ConversationSummary
from ..rows import when
from .tx import CHUNK, Tx, chunks, marks

OPENING = 200  # characters of the first user message a summary carries


def _of_agent(agent: Any) -> tuple[str, list[Any]]:
    """The condition on `c.agent_id` (appended to another) and its parameters."""
    if agent is UNSET:
        return "", []
    return (" AND c.agent_id IS NULL", []) if agent is None else (" AND c.agent_id = ?", [agent])


def _within(at: datetime, since: datetime | None, until: datetime | None) -> bool:
    return (since is None or at >= since) and (until is None or at < until)


async def summaries(
    tx: Tx,
    user_id: str,
    ids: Sequence[str] | None,
    agent: Any,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    offset: int,
) -> list[ConversationSummary]:
    """The user's conversations, newest first: those of `ids` when given, of `agent` (an agent's
    id, None: the default assistant's; UNSET: any), begun at or after `since` and before
    `until`, each with its messages' count, its last message's time and its opening."""
    if ids is not None and not ids:
        return []
    if ids is not None and len(ids) > CHUNK:  # the page's ids first, a chunk of them at a time
        heads: list[tuple[Any, str]] = []
        mine, theirs = _of_agent(agent)
        for chunk in chunks(list(ids)):
            found = await tx.all(
                f"SELECT c.created_at, c.id FROM conversations c WHERE c.user_id = ?{mine}"
                f" AND c.id IN ({marks(len(chunk))})",
                [user_id, *theirs, *chunk],
            )
            heads += [(when(r[0]), r[1]) for r in found if _within(when(r[0]), since, until)]
        heads.sort(reverse=True)
        page = [i for _, i in heads[offset : offset + limit]]
        return await summaries(tx, user_id, page, agent, since, until, limit, 0) if page else []
    where: list[str] = ["c.user_id = ?"]
    params: list[Any] = [user_id]
    if ids is not None:
        where.append(f"c.id IN ({marks(len(ids))})")
        params += ids
    mine, theirs = _of_agent(agent)
    where[0] += mine
    params += theirs
    if since is not None:
        where.append("c.created_at >= ?")
        params.append(since)
    if until is not None:
        where.append("c.created_at < ?")
        params.append(until)
    own = "m.user_id = ? AND m.conversation_id = c.id"
    rows = await tx.all(
        "SELECT c.id, c.agent_id, c.created_at, c.remember,"
        f" (SELECT count(*) FROM messages m WHERE {own}),"
        f" (SELECT max(m.created_at) FROM messages m WHERE {own}),"
        f" (SELECT substr(m.content, 1, {OPENING}) FROM messages m WHERE {own} AND m.role = 'user'"
        "   AND m.erased_at IS NULL ORDER BY m.created_at, m.id LIMIT 1)"
        f" FROM conversations c WHERE {' AND '.join(where)}"
        " ORDER BY c.created_at DESC, c.id DESC LIMIT ? OFFSET ?",
        [user_id, user_id, user_id, *params, int(limit), int(offset)],
    )
    return [
        ConversationSummary(
            r[0], r[1], when(r[2]), int(r[4]), when(r[5]) if r[5] else None, r[6] or None, bool(r[3])
        )
        for r in rows
    ]


async def set_remember(
    tx: Tx, user_id: str, conversation_id: str, agent_id: str | None, on: bool, at: datetime
) -> None:
    """The person's switch for the conversation; a conversation not stored yet is created
    (with `agent_id`, begun `at`), so that its first turn already knows."""
    await tx.execute(
        "INSERT INTO conversations (id, user_id, agent_id, created_at, remember) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (user_id, id) DO UPDATE SET remember = excluded.remember",
        (conversation_id, user_id, agent_id, at, on),
    )


async def remembered(tx: Tx, user_id: str, conversation_id: str) -> bool:
    """Whether the conversation's turns may be stored (one not stored yet: yes)."""
    row = await tx.one(
        "SELECT remember FROM conversations WHERE user_id = ? AND id = ?", (user_id, conversation_id)
    )
    return row is None or bool(row[0])
