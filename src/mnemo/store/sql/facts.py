"""Facts and their events: the reads, the rows a change writes, and the checks of a commit.

Reads see what the scope's agent rule allows (`domain.readable_agent_keys`);
`Scope(user, all_agents=True)` is the person's own full view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ... import audit
from ...domain import (
    Category,
    Change,
    Duplicate,
    Event,
    Fact,
    GateNotice,
    NotFound,
    Scope,
    Status,
    readable_agent_keys,
)
from .. import batch
from ..rows import AGENT_COLUMNS, EVENT_COLUMNS, FACT_COLUMNS, agent_from, event_from, fact_from, readable
from .people import agent_row
from .tx import Tx, marks

WRITE_COLUMNS = (
    "id, user_id, agent_id, text, text_hash, category, status, confidence, created_at,"
    " recorded_at, retired_at, valid_from, valid_to, supersedes, superseded_by, version, source,"
    " embedding_model, pinned, mentions, last_seen_at, purged"
)
_NAMES = [c.strip() for c in WRITE_COLUMNS.split(",")]
_EVENT_COLUMNS = "at, user_id, fact_id, action, actor, reason, before, after, digest, prev_hash, hash, salt"


def insert_facts(n: int) -> str:
    """The statement that inserts `n` facts, each a row of `WRITE_COLUMNS` (fact_values)."""
    row = f"({marks(len(_NAMES))})"
    return f"INSERT INTO facts ({WRITE_COLUMNS}) VALUES {', '.join([row] * n)}"


def insert_events(n: int) -> str:
    """The statement that inserts `n` events, each a row of audit.event_row."""
    row = f"({marks(12)})"
    return f"INSERT INTO fact_events ({_EVENT_COLUMNS}) VALUES {', '.join([row] * n)}"


def import_events(n: int) -> str:
    """The statement that inserts `n` events as they were exported (transfer.imported_event)."""
    row = f"({marks(14)})"
    return f"INSERT INTO fact_events ({_EVENT_COLUMNS}, redacted, redacted_for) VALUES {', '.join([row] * n)}"


# PostgreSQL answers these with `RETURNING rowid` / `RETURNING seq` (pipelined, it cannot ask
# again); SQLite reads the cursor's lastrowid, as a RETURNING costs it three times the insert
INSERT_FACT = insert_facts(1)
# an update sets all but the key (id, user_id), which never changes: Citus refuses to set the
# column a table is distributed by, even to the value it holds
UPDATE_FACT = (
    f"UPDATE facts SET {', '.join(f'{c} = ?' for c in _NAMES[2:])}"
    " WHERE id = ? AND user_id = ? AND version = ?"
)
INSERT_EVENT = insert_events(1)
IMPORT_EVENT = import_events(1)
HEAD = "SELECT hash FROM fact_events WHERE user_id = ? ORDER BY seq DESC LIMIT 1"


def fact_values(tx: Tx, f: Fact) -> tuple[Any, ...]:
    """The row of `WRITE_COLUMNS` a fact is stored as (a purged fact keeps no hash of its text)."""
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
        tx.json(f.source.to_json()),
        f.embedding_model,
        f.pinned,
        f.mentions,
        f.last_seen_at,
        f.purged,
    )


def write_fact(tx: Tx, change: Change) -> tuple[str, tuple[Any, ...]]:
    """The statement that writes the change's fact and its parameters (an update changes no row
    when the stored version is no longer `change.before`'s)."""
    values = fact_values(tx, change.fact)
    if change.before is None:
        return INSERT_FACT, values
    return UPDATE_FACT, (*values[2:], change.fact.id, change.fact.user_id, change.before.version)


def stale(change: Change) -> str:
    assert change.before is not None
    return f"memory {change.fact.id} changed since version {change.before.version}"


# -- visibility and reads ----------------------------------------------------------------------


async def agent_keys(tx: Tx, scope: Scope) -> list[str] | None:
    """The agents whose facts the scope reads ('' = the default agent); None: all of them."""
    if scope.all_agents or scope.readable is not None:
        return readable_agent_keys(scope, [])  # decided already (Scope.visible_to)
    rows = await tx.all(
        f"SELECT {AGENT_COLUMNS} FROM agents WHERE user_id = ? AND deleted_at IS NULL", (scope.user_id,)
    )
    return readable_agent_keys(scope, [agent_from(r) for r in rows])


async def visible(tx: Tx, scope: Scope) -> tuple[str, list[Any]]:
    """The WHERE clause of the agent rule over `facts f`. A caller's own condition on the key
    (f.id, f.rowid) finds its rows through the keys that begin with the user, (user_id, id)
    and (user_id, rowid)."""
    keys = await agent_keys(tx, scope)
    if keys is None:
        return "f.user_id = ?", [scope.user_id]
    return f"f.user_id = ? AND COALESCE(f.agent_id, '') IN ({marks(len(keys))})", [scope.user_id, *keys]


async def fact_rows(
    tx: Tx, scope: Scope, where: str, params: Sequence[Any], tail: str = ""
) -> list[tuple[tuple[Any, ...], Fact]]:
    """(row, fact) of the scope's facts matching `where`, in the order and number `tail` says."""
    rule, rule_params = await visible(tx, scope)
    rows = await tx.all(
        f"SELECT {FACT_COLUMNS} FROM facts f WHERE {rule} AND ({where}) {tail}", (*rule_params, *params)
    )
    return list(readable(rows, fact_from, "memory", 1))


async def vector_rows(tx: Tx, scope: Scope, fact_ids: Sequence[str], model: str) -> list[tuple[str, Any]]:
    """(fact id, its stored `model` vector as the backend holds it) of the scope's facts among
    `fact_ids` that have one."""
    if not fact_ids:
        return []
    rule, params = await visible(tx, scope)
    rows: list[tuple[str, Any]] = await tx.all(
        "SELECT f.id, v.embedding FROM fact_vectors v"
        " JOIN facts f ON f.user_id = v.user_id AND f.rowid = v.fact_rowid"
        f" WHERE {rule} AND f.id IN ({marks(len(fact_ids))}) AND v.model = ?",
        (*params, *fact_ids, model),
    )
    return rows


async def facts(tx: Tx, scope: Scope, where: str, params: Sequence[Any], tail: str = "") -> list[Fact]:
    return [fact for _, fact in await fact_rows(tx, scope, where, params, tail)]


async def get_fact(tx: Tx, scope: Scope, fact_id: str) -> Fact:
    found = await facts(tx, scope, "f.id = ?", (fact_id,))
    if not found:
        raise NotFound(f"no memory {fact_id}")
    return found[0]


def chosen(
    statuses: Sequence[Status] | None, category: Category | None, pinned: bool | None
) -> tuple[str, list[Any]]:
    """The WHERE clause of a listing's filters over `facts f`: any of the statuses (all when
    none are named), the category, pinned or not."""
    where, params = ["1 = 1"], list[Any]()
    if statuses:
        where.append(f"f.status IN ({marks(len(statuses))})")
        params += [str(s) for s in statuses]
    if category is not None:
        where.append("f.category = ?")
        params.append(str(category))
    if pinned is not None:
        where.append("f.pinned" if pinned else "NOT f.pinned")
    return " AND ".join(where), params


async def list_facts(
    tx: Tx,
    scope: Scope,
    statuses: Sequence[Status] | None,
    limit: int,
    offset: int,
    category: Category | None = None,
    pinned: bool | None = None,
) -> list[Fact]:
    where, params = chosen(statuses, category, pinned)
    tail = "ORDER BY f.created_at DESC, f.rowid DESC LIMIT ? OFFSET ?"
    return await facts(tx, scope, where, [*params, limit, offset], tail)


async def count_facts(
    tx: Tx,
    scope: Scope,
    statuses: Sequence[Status] | None,
    category: Category | None = None,
    pinned: bool | None = None,
) -> int:
    """How many facts `list_facts` pages through with the same filters."""
    rule, rule_params = await visible(tx, scope)
    where, params = chosen(statuses, category, pinned)
    row = await tx.one(f"SELECT COUNT(*) FROM facts f WHERE {rule} AND ({where})", (*rule_params, *params))
    return int(row[0]) if row else 0


async def find_by_hash(tx: Tx, scope: Scope, text_hash: str, statuses: Sequence[Status]) -> list[Fact]:
    where = f"f.text_hash = ? AND f.status IN ({marks(len(statuses))})"
    return await facts(tx, scope, where, (text_hash, *map(str, statuses)), "ORDER BY f.rowid")


async def recent(tx: Tx, scope: Scope, since: datetime, k: int) -> list[Fact]:
    where = "f.status = 'active' AND f.last_seen_at >= ?"
    # a literal limit: SQLite runs this (on every recall) several times faster than with a bound one
    tail = f"ORDER BY f.last_seen_at DESC, f.rowid DESC LIMIT {int(k)}"
    return await facts(tx, scope, where, (since,), tail)


async def during(tx: Tx, scope: Scope, start: datetime, end: datetime, k: int) -> list[Fact]:
    """Two searches, each down an index of its own (migration 20), merged: one statement with
    an OR walked every active fact of the person for a window that held none."""
    tail = f"ORDER BY f.created_at DESC, f.rowid DESC LIMIT {int(k)}"
    found = {
        row[0]: (row, fact)
        for column in ("created_at", "valid_from")  # said then, or became true then
        for row, fact in await fact_rows(
            tx, scope, f"f.status = 'active' AND f.{column} >= ? AND f.{column} < ?", (start, end), tail
        )
    }
    newest = sorted(found.values(), key=lambda rf: (rf[1].created_at, rf[0][0]), reverse=True)
    return [fact for _, fact in newest[:k]]


async def unheard(tx: Tx, scope: Scope, before: Mapping[Category, datetime], limit: int) -> list[Fact]:
    """Active facts with no end, each of a category in `before`, last said (or kept) and last
    recalled before that category's time: the longest unheard first."""
    if not before:
        return []
    said = "COALESCE(f.last_seen_at, f.recorded_at, f.created_at)"
    # the later of when it was said (or kept) and when it was last recalled (NULL: never)
    heard = f"CASE WHEN f.last_recalled_at > {said} THEN f.last_recalled_at ELSE {said} END"
    # a fact that becomes true later (a plan's start) is not unheard before it began
    unheard = f"(f.category = ? AND {heard} < ? AND (f.valid_from IS NULL OR f.valid_from < ?))"
    where = f"f.status = 'active' AND f.valid_to IS NULL AND ({' OR '.join([unheard] * len(before))})"
    params = [v for category, at in before.items() for v in (str(category), at, at)]
    return await facts(tx, scope, where, params, f"ORDER BY {heard}, f.rowid LIMIT {int(limit)}")


async def learnt_in(tx: Tx, scope: Scope, conversation_id: str, since: datetime, limit: int) -> list[Fact]:
    """The scope's facts whose source is that conversation, made at or after `since` (when it
    began: not those of an erased one whose id it took again), any status, oldest first."""
    where = f"{tx.json_text('f.source', 'conversation_id')} = ? AND f.created_at >= ?"
    tail = f"ORDER BY f.created_at, f.rowid LIMIT {int(limit)}"
    return await facts(tx, scope, where, (conversation_id, since), tail)


def _id_start(prefix: str) -> bool:
    """Whether `prefix` can start an id mnemo made: hex digits and dashes only (no wildcard)."""
    return bool(prefix) and all(c in "0123456789abcdef-" for c in prefix)


async def ids_starting(tx: Tx, scope: Scope, prefix: str, limit: int) -> list[str]:
    """The ids of the scope's facts that start with `prefix` (hex digits and dashes only: an id's
    characters), in order, at most `limit`."""
    if not _id_start(prefix):
        return []
    rule, params = await visible(tx, scope)
    rows = await tx.all(
        f"SELECT f.id FROM facts f WHERE {rule} AND f.id LIKE ? ORDER BY f.id LIMIT {int(limit)}",
        (*params, prefix + "%"),  # no wildcard in it: an id's characters only
    )
    return [str(r[0]) for r in rows]


OWNED_IDS = {"turn": "jobs", "receipt": "receipts"}  # what else a person names by a short id


async def owned_ids_starting(tx: Tx, kind: str, user_id: str, prefix: str, limit: int) -> list[str]:
    """The ids of the person's turns or receipts (`kind`) that start with `prefix`, in order."""
    if not _id_start(prefix):
        return []
    rows = await tx.all(
        f"SELECT id FROM {OWNED_IDS[kind]} WHERE user_id = ? AND id LIKE ? ORDER BY id LIMIT {int(limit)}",
        (user_id, prefix + "%"),
    )
    return [str(r[0]) for r in rows]


async def pinned(tx: Tx, scope: Scope) -> list[Fact]:
    """Oldest first. Sorted here, not by the statement: asked to order by created_at, SQLite
    would rather walk facts_said through every active fact than sort the few pinned ones
    that the partial index facts_pinned finds at once."""
    where = f"f.pinned = {tx.true} AND f.status = 'active'"
    found = await fact_rows(tx, scope, where, ())
    return [fact for _, fact in sorted(found, key=lambda rf: (rf[1].created_at, rf[0][0]))]


# -- events ------------------------------------------------------------------------------------


async def head(tx: Tx, user_id: str) -> str:
    """The hash of the user's last event (audit.GENESIS when there is none)."""
    row = await tx.one(HEAD, (user_id,))
    return row[0] if row else audit.GENESIS


async def record_notices(
    tx: Tx, user_id: str, notices: Sequence[GateNotice], at: datetime, prev: str | None = None
) -> list[Event]:
    """Append the gate's notices to the user's log, chained after `prev` (default: the head,
    read here under the user's lock)."""
    if not notices:
        return []
    if prev is None:
        await tx.lock_user(user_id)
        prev = await head(tx, user_id)
    sealed = []
    for notice in notices:
        sealed.append(audit.seal_notice(notice, user_id, at, prev))
        prev = sealed[-1].hash
    await tx.many(INSERT_EVENT, [audit.event_row(e) for e in sealed])
    return sealed


async def events(tx: Tx, user_id: str, fact_id: str | None, until: datetime | None) -> list[Event]:
    sql = f"SELECT {EVENT_COLUMNS} FROM fact_events WHERE user_id = ?"
    params: list[Any] = [user_id]
    if fact_id is not None:
        sql += " AND fact_id = ?"
        params.append(fact_id)
    found = [e for _, e in readable(await tx.all(sql + " ORDER BY seq", params), event_from, "event", 0)]
    return [e for e in found if until is None or e.at <= until]


# -- what a commit checks once its changes are written -------------------------------------------


async def check_unique(tx: Tx, user_id: str, changes: Sequence[Change]) -> None:
    """Duplicate when the batch left two facts of one agent with the same text and status; the
    user's writers wait for this one (`Tx.lock_user`), so none can slip in between. One
    statement per 500 texts, however large the batch."""
    keys = batch.unique_keys(changes)
    if not keys:
        return
    hashes = sorted({text_hash for _, text_hash, _ in keys})
    statuses = sorted({status for _, _, status in keys})
    twins: dict[tuple[str, str, str], list[str]] = {}
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        rows = await tx.all(
            "SELECT COALESCE(agent_id, ''), text_hash, status, id FROM facts WHERE user_id = ?"
            f" AND text_hash IN ({marks(len(chunk))}) AND status IN ({marks(len(statuses))}) ORDER BY rowid",
            (user_id, *chunk, *statuses),
        )
        for agent, text_hash, status, fact_id in rows:
            twins.setdefault((agent, text_hash, status), []).append(fact_id)
    ours = {c.fact.id for c in changes}
    for key in sorted(keys):
        found = twins.get(key, [])
        if len(found) > 1:
            other = next((i for i in found if i not in ours), found[0])
            raise Duplicate(f"memory {other} already says this", other)


async def check_agents(tx: Tx, user_id: str, changes: Sequence[Change]) -> None:
    for agent_id in sorted(batch.living_agents(changes)):
        await agent_row(tx, user_id, agent_id)  # NotFound for a deleted (or another's) agent


async def taken_fact(tx: Tx, user_id: str, ids: Sequence[str]) -> str | None:
    """One of these fact ids that the user has already, if any."""
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        row = await tx.one(
            f"SELECT id FROM facts WHERE user_id = ? AND id IN ({marks(len(chunk))}) LIMIT 1",
            (user_id, *chunk),
        )
        if row:
            return str(row[0])
    return None
