"""Applying changes in the PostgreSQL store: facts, vectors and hash-chained events in one transaction.

The statements of a batch are pipelined (sent without waiting for each
answer): nothing in a change depends on the database's answer to the one
before — the chain's hashes are computed here, and a vector finds its fact by
id. The answers are read once all are sent; a stale version is a Conflict,
raised before the transaction commits, so nothing of the batch is applied.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import psycopg

from .. import audit
from ..domain import BackfillMark, Change, Claim, Conflict, Duplicate, Event, Fact, Status
from . import batch
from .migrations.postgres import LOCK_NAMESPACE
from .postgres_events import redact_events

_WRITE_COLUMNS = (
    "id, user_id, agent_id, text, text_hash, category, status, confidence, created_at,"
    " recorded_at, retired_at, valid_from, valid_to, supersedes, superseded_by, version, source,"
    " embedding_model, pinned, mentions, last_seen_at, purged"
)
_NAMES = [c.strip() for c in _WRITE_COLUMNS.split(",")]
_INSERT = (
    f"INSERT INTO facts ({_WRITE_COLUMNS})"
    f" VALUES ({', '.join('%s::jsonb' if c == 'source' else '%s' for c in _NAMES)}) RETURNING rowid"
)
_UPDATE = (
    f"UPDATE facts SET {', '.join(f'{c} = %s::jsonb' if c == 'source' else f'{c} = %s' for c in _NAMES)}"
    " WHERE id = %s AND user_id = %s AND version = %s RETURNING rowid"
)
_ROWID = "(SELECT rowid FROM facts WHERE user_id = %(user)s AND id = %(id)s)"


@dataclass
class _Sent:
    """The cursors holding one change's answers, read after the pipeline."""

    change: Change
    fact: psycopg.AsyncCursor
    event: psycopg.AsyncCursor
    vector: psycopg.AsyncCursor | None  # answers (the model, if it had a vector before; the models dropped)
    vector_delta: int = 0  # -1: the fact's vector was removed


class CommitMixin:
    """Part of PostgresStore (it supplies `_tx`, `_clock`, `_finish_job`, `_advance_mark` and
    `_agent_row`)."""

    async def commit(
        self,
        user_id: str,
        changes: Sequence[Change],
        at: datetime,
        *,
        finish: tuple[Claim, dict] | None = None,
        mark: BackfillMark | None = None,
        retire: str | None = None,
    ) -> list[Event]:
        if not changes and finish is None and mark is None and retire is None:
            return []
        changes = list(changes)
        batch.check(user_id, changes)
        async with self._tx(user_id) as cur:
            # one writer per user at a time: the chain's head is read and extended under this lock
            await cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMESPACE, user_id))
            if finish is not None:
                claim, result = finish
                await self._finish_job(cur, user_id, claim, {**result, "events": len(changes)}, self._clock())
            if mark is not None:
                await self._advance_mark(cur, user_id, mark, self._clock())
            for change in changes:  # first, as they may seal the log again (see mnemo.audit)
                if change.redact:
                    await redact_events(cur.connection, user_id, change.fact.id)
            await cur.execute(
                "SELECT hash FROM fact_events WHERE user_id = %s ORDER BY seq DESC LIMIT 1", (user_id,)
            )
            row = await cur.fetchone()
            prev = row[0] if row else audit.GENESIS
            sent: list[_Sent] = []
            events: list[Event] = []
            async with cur.connection.pipeline():
                for change in changes:
                    event, answers = await self._send(cur.connection, user_id, change, at, prev)
                    events.append(event)
                    sent.append(answers)
                    prev = event.hash
            counts: dict[str, int] = {}
            for i, answers in enumerate(sent):
                events[i] = await self._check(answers, events[i], counts)
            await _check_unique(cur, user_id, changes)
            for agent_id in batch.living_agents(changes):
                await self._agent_row(cur, user_id, agent_id)  # NotFound for a deleted (or another's) agent
            if retire is not None:
                await self._retire_agent(cur, user_id, retire)
            await self._count(cur, user_id, changes, counts)
        return events

    async def _retire_agent(self, cur: psycopg.AsyncCursor, user_id: str, agent_id: str) -> None:
        await self._agent_row(cur, user_id, agent_id)
        await cur.execute(
            "SELECT id FROM facts WHERE user_id = %s AND agent_id = %s AND status IN ('active', 'candidate')"
            " LIMIT 1",
            (user_id, agent_id),
        )
        left = await cur.fetchone()
        if left is not None:
            raise Conflict(f"agent {agent_id} gained memory {left[0]} meanwhile")
        await cur.execute(
            "UPDATE agents SET deleted_at = %s WHERE id = %s AND user_id = %s",
            (self._clock(), agent_id, user_id),
        )

    async def _count(
        self, cur: psycopg.AsyncCursor, user_id: str, changes: list[Change], vectors: dict[str, int]
    ) -> None:
        """Move the user's counts of vectors (per model) and of active facts by this batch."""
        for model, delta in vectors.items():
            if delta:
                await cur.execute(
                    "INSERT INTO vector_counts VALUES (%s, %s, %s) ON CONFLICT (user_id, model)"
                    " DO UPDATE SET n = vector_counts.n + excluded.n",
                    (user_id, model, delta),
                )
        active = sum(_active(c.fact) - _active(c.before) for c in changes)
        if active:
            await cur.execute(
                "INSERT INTO fact_counts VALUES (%s, %s) ON CONFLICT (user_id)"
                " DO UPDATE SET active = fact_counts.active + excluded.active",
                (user_id, active),
            )

    async def _send(
        self, conn: psycopg.AsyncConnection, user_id: str, change: Change, at: datetime, prev: str
    ) -> tuple[Event, _Sent]:
        fact = change.fact
        fact_cur = conn.cursor()
        values = _values(fact)
        if change.before is None:
            await fact_cur.execute(_INSERT, values)
        else:
            await fact_cur.execute(_UPDATE, (*values, fact.id, fact.user_id, change.before.version))
        vector_cur, delta = await self._send_vector(conn, change)
        event = audit.seal(change, user_id, at, prev)
        event_cur = conn.cursor()
        await event_cur.execute(
            "INSERT INTO fact_events"
            " (at, user_id, fact_id, action, actor, reason, before, after, digest, prev_hash, hash, salt)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
            audit.event_row(event),
        )
        return event, _Sent(change, fact_cur, event_cur, vector_cur, delta)

    async def _send_vector(
        self, conn: psycopg.AsyncConnection, change: Change
    ) -> tuple[psycopg.AsyncCursor | None, int]:
        """Keep the fact's vector row in step with it (the lexical index is a generated column)."""
        f = change.fact
        model = f.embedding_model or (change.before.embedding_model if change.before else None)
        if model is None:
            return None, 0
        cur = conn.cursor()
        params = {
            "id": f.id,
            "user": f.user_id,
            "active": _active(f),
            "agent": f.agent_id or "",
        }
        if f.purged:
            await cur.execute(
                f"DELETE FROM fact_vectors WHERE user_id = %(user)s AND fact_rowid = {_ROWID}"
                " RETURNING model",
                params,
            )
            return cur, -1
        if change.vector is None:
            await cur.execute(
                "UPDATE fact_vectors SET active = %(active)s, agent_key = %(agent)s"
                f" WHERE user_id = %(user)s AND fact_rowid = {_ROWID}"
                " AND (active, agent_key) IS DISTINCT FROM (%(active)s, %(agent)s)",
                params,
            )
            return None, 0
        vector = np.asarray(change.vector, dtype=np.float32)
        # `old` reads the row as it was before this statement: whether the model had one already.
        # `gone`: when the text changed, other models' vectors (written by `mnemo reindex`)
        # embed the old text, so they go; reindex embeds the fact again.
        await cur.execute(
            "WITH old AS (SELECT model FROM fact_vectors"
            f" WHERE user_id = %(user)s AND fact_rowid = {_ROWID} AND model = %(model)s),"
            " gone AS (DELETE FROM fact_vectors"
            f" WHERE user_id = %(user)s AND fact_rowid = {_ROWID} AND model <> %(model)s AND %(stale)s"
            " RETURNING model)"
            " INSERT INTO fact_vectors (fact_rowid, user_id, model, dims, active, agent_key, embedding)"
            " SELECT rowid, %(user)s, %(model)s, %(dims)s, %(active)s, %(agent)s, %(vector)b"
            " FROM facts WHERE user_id = %(user)s AND id = %(id)s"
            # the key is (fact_rowid, model) since migration 5; named, so that a database not yet
            # migrated (key fact_rowid) is written to as before
            " ON CONFLICT ON CONSTRAINT fact_vectors_pkey DO UPDATE SET model = excluded.model,"
            " dims = excluded.dims,"
            " active = excluded.active, agent_key = excluded.agent_key, embedding = excluded.embedding"
            " RETURNING (SELECT model FROM old), ARRAY(SELECT model FROM gone)",
            {
                **params,
                "model": model,
                "dims": vector.shape[0],
                "vector": vector,
                "stale": change.before is not None and change.before.text != f.text,
            },
        )
        return cur, 0

    async def _check(self, sent: _Sent, event: Event, counts: dict[str, int]) -> Event:
        """Read one change's answers: its version held, how its vectors counted, its event's seq."""
        if await sent.fact.fetchone() is None:
            before = sent.change.before
            raise Conflict(f"memory {sent.change.fact.id} changed since version {before.version}")
        if sent.vector is not None:
            model = sent.change.fact.embedding_model or sent.change.before.embedding_model
            for old, *gone in await sent.vector.fetchall():
                if sent.vector_delta < 0:
                    counts[old] = counts.get(old, 0) - 1
                    continue
                if old is None:
                    counts[model] = counts.get(model, 0) + 1
                for other in gone[0]:
                    counts[other] = counts.get(other, 0) - 1
        (seq,) = await sent.event.fetchone()
        return replace(event, seq=seq)


async def _check_unique(cur: psycopg.AsyncCursor, user_id: str, changes: list[Change]) -> None:
    """Duplicate when the batch left two facts of one agent with the same text and status; the
    user's advisory lock makes their other writers wait for this one, so none slips in between."""
    keys = batch.unique_keys(changes)
    if not keys:
        return
    await cur.execute(
        "SELECT COALESCE(agent_id, ''), text_hash, status, array_agg(id ORDER BY rowid) FROM facts"
        " WHERE user_id = %s AND text_hash = ANY (%s) AND status = ANY (%s)"
        " GROUP BY 1, 2, 3 HAVING count(*) > 1",
        (user_id, [k[1] for k in keys], [k[2] for k in keys]),
    )
    ours = {c.fact.id for c in changes}
    for agent, text_hash, status, twins in await cur.fetchall():
        if (agent, text_hash, status) in keys:
            other = next((i for i in twins if i not in ours), twins[0])
            raise Duplicate(f"memory {other} already says this", other)


def _active(f: Fact | None) -> bool:
    """Whether a fact is found by search (in the counts and the vector filters)."""
    return f is not None and f.status == Status.ACTIVE and not f.purged


def _values(f: Fact) -> tuple:
    return (
        f.id,
        f.user_id,
        f.agent_id,
        f.text,
        None if f.purged else f.text_hash,
        str(f.category),
        str(f.status),
        f.confidence,
        f.created_at,
        f.recorded_at,
        f.retired_at,
        f.valid_from,
        f.valid_to,
        f.supersedes,
        f.superseded_by,
        f.version,
        json.dumps(f.source.to_json()),
        f.embedding_model,
        f.pinned,
        f.mentions,
        f.last_seen_at,
        f.purged,
    )
