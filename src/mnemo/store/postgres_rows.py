"""Columns the PostgreSQL store selects, shaped like SQLite's rows so that one set of
conversions (store/sqlite_rows.py) serves both: JSON columns come back as text,
times as datetimes (which `parse_time` takes as they are)."""

from __future__ import annotations

from .sqlite_rows import (
    EVENT_COLUMNS,
    agent_from,
    event_from,
    fact_from,
    job_from,
    key_from,
    load,
    readable,
    user_from,
)

__all__ = [
    "AGENT_COLUMNS",
    "EVENT_COLUMNS",
    "FACT_COLUMNS",
    "JOB_COLUMNS",
    "KEY_COLUMNS",
    "USER_COLUMNS",
    "agent_from",
    "event_from",
    "fact_from",
    "job_from",
    "key_from",
    "load",
    "readable",
    "user_from",
]

USER_COLUMNS = "id, name, created_at, memory_enabled, review_policy"
AGENT_COLUMNS = "id, user_id, name, private, reads_default, persona, upstream_model"
KEY_COLUMNS = "id, user_id, name, secret_hash, created_at, revoked_at"
FACT_COLUMNS = ", ".join(
    f"f.{c}"
    for c in (
        "rowid, id, user_id, agent_id, text, category, status, confidence, created_at, recorded_at,"
        " retired_at, valid_from, valid_to, supersedes, superseded_by, version, source::text,"
        " embedding_model, pinned, mentions, last_seen_at, purged"
    ).split(", ")
)
JOB_COLUMNS = (
    "id, user_id, agent_id, conversation_id, message_ids::text, automation, turn_at, status, attempts,"
    " next_attempt_at, created_at, lease_until, claimed_by, last_error, result::text, finished_at"
)
