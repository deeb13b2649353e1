"""Everything mnemo holds about a person, as JSON records: one per line makes JSONL.

The web page's "Export everything" streams these; a `mnemo export` command can
write the same. Records, in order: the user (`type: "user"`), each agent
(`"agent"`), then each fact with every event of its history (`"fact"`, newest
fact first; the events oldest first, a purged fact's without its text).
Conversations are not part of it yet.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from .domain import Agent, Event, Scope, User
from .memory import Memory

FORMAT = 1
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


async def records(memory: Memory, user: User) -> AsyncIterator[dict[str, Any]]:
    """The person's data, record by record."""
    yield {
        "type": "user",
        "format": FORMAT,
        "id": user.id,
        "name": user.name,
        "memory_enabled": user.memory_enabled,
        "review_policy": str(user.review_policy),
        "exported_at": memory.clock().isoformat(),
    }
    for agent in await memory.agents(user.id):
        yield agent_record(agent)
    by_fact: dict[str, list[Event]] = defaultdict(list)
    for event in await memory.events(user.id):
        by_fact[event.fact_id].append(event)
    scope = Scope(user.id, all_agents=True)
    offset = 0
    while batch := await memory.list(scope, statuses=None, limit=_BATCH, offset=offset):
        offset += len(batch)
        for fact in batch:
            events = by_fact.pop(fact.id, [])
            yield {"type": "fact", **fact.snapshot(), "events": [event_record(e) for e in events]}
        if len(batch) < _BATCH:
            break


async def jsonl(memory: Memory, user: User) -> AsyncIterator[str]:
    async for record in records(memory, user):
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
