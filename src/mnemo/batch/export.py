"""Everything mnemo holds about a person, as JSON records: one per line makes JSONL.

The web page's "Export everything" streams these and `mnemo export` writes
them; `mnemo import` reads them back losslessly (see mnemo.batch.transfer and
docs/export-format.md). Records, in order: a header (`type: "header"`: the
format, mnemo's version, when, and the user), each agent (`"agent"`), each
fact with every event of its history (`"fact"`, newest fact first; the events
oldest first, a purged fact's without its text), each conversation with its
messages and the turns backfill has learnt from (`"conversation"`, oldest
first; an import keeps them, so backfill does not learn those turns again), each row of the
recall log kept (`"recall"`: which assistant was given which fact, when; oldest first; an
import leaves them out), and an `"end"` record with the counts, so that a reader can tell a
whole file from a cut one.

An event's `seq` here is its place in the person's log (1 = their first
event), not the store's own sequence number, which is shared by every user:
so the same history exports the same wherever it is stored.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from .. import __version__
from ..accounts import Accounts
from ..domain import Agent, Conversation, Event, RecallRecord, Scope, User
from ..memory import Memory

# 5: the gate's notices; 4: the recall log; 3: each event's salt (see mnemo.audit); 2: backfill marks
FORMAT = 5
_BATCH = 500


def event_record(e: Event) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "at": e.at.isoformat(),
        "fact_id": e.fact_id,
        "action": str(e.action),
        "actor": e.actor,
        "reason": e.reason,
        "before": e.before,
        "after": e.after,
        "redacted": e.redacted,
        "digest": e.digest,
        "salt": e.salt,
        "redacted_for": e.redacted_for,
        "prev_hash": e.prev_hash,
        "hash": e.hash,
    }


def agent_record(a: Agent) -> dict[str, Any]:
    return {
        "type": "agent",
        "id": a.id,
        "name": a.name,
        "private": a.private,
        "reads_default": a.reads_default,
        "persona": a.persona,
        "upstream_model": a.upstream_model,
    }


def user_record(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "name": user.name,
        "memory_enabled": user.memory_enabled,
        "review_policy": str(user.review_policy),
        "record_recalls": user.record_recalls,
        "review_stale": user.review_stale,
        "sensitive_gate": user.gate.choices(),  # what differs from the defaults
    }


def recall_record(recall_id: str, r: RecallRecord) -> dict[str, Any]:
    return {
        "type": "recall",
        "recall_id": recall_id,
        "fact_id": r.fact_id,
        "agent_id": r.agent_id,
        "at": r.at.isoformat(),
        "via": str(r.via),
    }


def conversation_record(c: Conversation) -> dict[str, Any]:
    return {
        "type": "conversation",
        "id": c.id,
        "agent_id": c.agent_id,
        "created_at": c.created_at.isoformat(),
        "remember": c.remember,
        "messages": [
            {"id": m.id, "role": m.role, "content": m.content, "at": m.at.isoformat() if m.at else None}
            for m in c.messages
        ],
        "backfill": [
            {
                "turn_id": m.turn_id,
                "run_id": m.run_id,
                "said_at": m.said_at.isoformat(),
                "processed_at": m.processed_at.isoformat() if m.processed_at else None,
            }
            for m in c.marks
        ],
    }


async def records(memory: Memory, accounts: Accounts, user: User) -> AsyncIterator[dict[str, Any]]:
    """The person's data, record by record."""
    yield {
        "type": "header",
        "format": FORMAT,
        "mnemo_version": __version__,
        "exported_at": memory.clock().isoformat(),
        "user": user_record(user),
    }
    counts = dict.fromkeys(("agents", "facts", "events", "conversations", "messages", "recalls"), 0)
    for agent in await accounts.agents(user.id):
        counts["agents"] += 1
        yield agent_record(agent)
    # the log first, then the facts: a fact written meanwhile comes without events,
    # but the log stays a whole prefix of the chain
    by_fact: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for place, event in enumerate(await memory.events(user.id), start=1):
        by_fact[event.fact_id].append({**event_record(event), "seq": place})
    scope = Scope(user.id, all_agents=True)
    offset = 0
    while batch := await memory.list(scope, statuses=None, limit=_BATCH, offset=offset):
        offset += len(batch)
        for fact in batch:
            events = by_fact.pop(fact.id, [])
            counts["facts"] += 1
            counts["events"] += len(events)
            yield {"type": "fact", **fact.snapshot(), "events": events}
        if len(batch) < _BATCH:
            break
    for notice in by_fact.pop("", []):  # what the sensitive-data gate did where no fact changed
        counts["events"] += 1
        yield {"type": "notice", **notice}
    after = None
    while page := await memory.conversations(user.id, after=after, limit=_BATCH // 5):
        for conversation in page:
            counts["conversations"] += 1
            counts["messages"] += len(conversation.messages)
            yield conversation_record(conversation)
        after = (page[-1].created_at, page[-1].id)
    async for recall_id, recall in memory.recall_log(user.id):
        counts["recalls"] += 1
        yield recall_record(recall_id, recall)
    yield {"type": "end", **counts}


def line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


async def jsonl(memory: Memory, accounts: Accounts, user: User) -> AsyncIterator[str]:
    async for record in records(memory, accounts, user):
        yield line(record)
