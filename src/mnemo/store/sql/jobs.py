"""The durable queue of turns to learn from: the statements both stores share.

A turn's messages and its job are written in one transaction; a worker claims
a job with a lease (the claim is each store's own: see SQLiteStore.claim_job
and PostgreSQL's mnemo_claim_job_of); finishing it happens inside the transaction
that applies the facts it produced (see SQLStore.commit), so a crash at any
point either leaves the job to be claimed again or leaves it done with its
facts — never facts without a finished job.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...domain import (
    Claim,
    Conflict,
    FailReason,
    InvalidInput,
    Job,
    JobStatus,
    Message,
    NotFound,
    NotRemembered,
    QueueFull,
    Scope,
    new_id,
    parse_time,
)
from ..rows import JOB_COLUMNS, job_from, when
from . import conversations
from .people import save_messages
from .tx import Tx


async def job(tx: Tx, user_id: str, job_id: str) -> Job:
    row = await tx.one(f"SELECT {JOB_COLUMNS} FROM jobs WHERE user_id = ? AND id = ?", (user_id, job_id))
    if row is None:
        raise NotFound(f"no job {job_id}")
    return job_from(row)


# a person's turns waiting to be learnt from (the partial index jobs_open holds just these)
_QUEUED = "status IN ('pending', 'claimed', 'over_budget')"


async def queued_turns(tx: Tx, user_id: str) -> int:
    """How many of the person's turns wait to be learnt from: queued, in hand or over budget."""
    row = await tx.one(f"SELECT COUNT(*) FROM jobs WHERE user_id = ? AND {_QUEUED}", (user_id,))
    return int(row[0]) if row else 0


async def user_job_counts(tx: Tx, user_id: str) -> dict[str, int]:
    """How many of the person's turns are in each state (the administrator's page)."""
    rows = await tx.all("SELECT status, COUNT(*) FROM jobs WHERE user_id = ? GROUP BY status", (user_id,))
    return {str(r[0]): int(r[1]) for r in rows}


async def enqueue_turn(
    tx: Tx,
    scope: Scope,
    conversation_id: str,
    messages: Sequence[Message],
    at: datetime,
    automation: bool,
    now: datetime,
    job_id: str | None,
    max_queued: int,
) -> Job:
    """`max_queued` (0: no limit): past that many of the person's turns waiting, QueueFull and
    nothing stored; counted under the person's lock, so two turns at once cannot both pass.
    The job carries its person's latest claim (see `stamp_claim`)."""
    if max_queued and not automation:
        await tx.lock_user(scope.user_id)
        waiting = await queued_turns(tx, scope.user_id)
        if waiting >= max_queued:
            raise QueueFull(
                f"{waiting} of your turns are waiting to be learnt from (the most this server"
                f" queues for one person is {max_queued}); nothing was stored: try again later"
            )
    if not await conversations.remembered(tx, scope.user_id, conversation_id):
        raise NotRemembered(
            f"conversation {conversation_id!r} is not remembered: nothing of the turn was stored"
        )
    saved = await save_messages(tx, scope, conversation_id, messages, at)
    job_id = job_id or new_id()
    last = await tx.one("SELECT MAX(user_claimed_at) FROM jobs WHERE user_id = ?", (scope.user_id,))
    await tx.execute(
        "INSERT INTO jobs (id, user_id, agent_id, conversation_id, message_ids, automation,"
        " turn_at, status, next_attempt_at, created_at, user_claimed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            job_id,
            scope.user_id,
            scope.agent_id,
            conversation_id,
            tx.json([m.id for m in saved]),
            automation,
            at,
            str(JobStatus.PENDING),
            now,
            now,
            parse_time(last[0]) if last else None,
        ),
    )
    return await job(tx, scope.user_id, job_id)


async def stamp_claim(tx: Tx, user_id: str, job_id: str, now: datetime) -> None:
    """Workers take people in turn: the claim looks first at the people served longest ago (or
    never), by the `user_claimed_at` of each one's earliest open job. A claim stamps it on the
    job claimed (should it come back, retried or over budget) and on the person's next open
    job, which is the one the claim will look at next; a job queued later takes the latest
    stamp of its person's jobs when it is queued (`enqueue_turn`)."""
    await tx.execute(
        "UPDATE jobs SET user_claimed_at = ? WHERE user_id = ? AND (id = ? OR id = (SELECT MIN(e.id)"
        f" FROM jobs e WHERE e.user_id = ? AND e.id > ? AND e.{_QUEUED}))",
        (now, user_id, job_id, user_id, job_id),
    )


async def release_job(tx: Tx, claim: Claim) -> None:
    """Give a claimed job back untouched (shutdown): it does not count as an attempt."""
    user_id = await tx.claimant(claim.job_id, claim.worker)
    if user_id is None:
        return
    await tx.execute(
        "UPDATE jobs SET status = 'pending', claimed_by = NULL, lease_until = NULL, attempts = attempts - 1"
        " WHERE user_id = ? AND id = ? AND status = 'claimed' AND claimed_by = ?",
        (user_id, claim.job_id, claim.worker),
    )


async def defer_job(tx: Tx, claim: Claim, until: datetime) -> Job:
    """Its person's tokens of the day are spent: the claimed job waits over budget until
    `until` (the next UTC midnight); the claim does not count as an attempt."""
    user_id = await tx.claimant(claim.job_id, claim.worker)
    if user_id is not None:
        changed = await tx.execute(
            "UPDATE jobs SET status = 'over_budget', next_attempt_at = ?, claimed_by = NULL,"
            " lease_until = NULL, attempts = attempts - 1"
            " WHERE user_id = ? AND id = ? AND status = 'claimed' AND claimed_by = ?",
            (until, user_id, claim.job_id, claim.worker),
        )
        if changed == 1:
            return await job(tx, user_id, claim.job_id)
    raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")


async def fail_job(
    tx: Tx, claim: Claim, reason: FailReason, error: str, retry_at: datetime | None, now: datetime
) -> Job:
    """Try again at `retry_at`, or park the job as failed when it is None; `reason` is what its
    person reads, `error` the detail."""
    if retry_at is None:
        sql, when = "status = 'failed', finished_at = ?", now
    else:
        sql, when = "status = 'pending', next_attempt_at = ?", retry_at
    user_id = await tx.claimant(claim.job_id, claim.worker)
    if user_id is not None:
        changed = await tx.execute(
            f"UPDATE jobs SET {sql}, last_error = ?, result = ?, claimed_by = NULL, lease_until = NULL"
            " WHERE user_id = ? AND id = ? AND status = 'claimed' AND claimed_by = ?",
            (when, error[:2000], tx.json({"reason": str(reason)}), user_id, claim.job_id, claim.worker),
        )
        if changed == 1:
            return await job(tx, user_id, claim.job_id)
    raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")


async def retry_job(tx: Tx, user_id: str, job_id: str, now: datetime) -> Job:
    """Queue a failed job of the user's again, due `now`, with its attempts reset; its result
    keeps the reason it failed until it is learnt from. NotFound for another user's job,
    InvalidInput (nothing changed) for one that has not failed."""
    changed = await tx.execute(
        "UPDATE jobs SET status = 'pending', attempts = 0, next_attempt_at = ?, finished_at = NULL,"
        " last_error = NULL, claimed_by = NULL, lease_until = NULL"
        " WHERE user_id = ? AND id = ? AND status = 'failed'",
        (now, user_id, job_id),
    )
    found = await job(tx, user_id, job_id)
    if changed != 1:
        raise InvalidInput(
            f"turn {job_id} has not failed (it is {found.status}): only a failed turn is retried"
        )
    return found


async def finish_job(tx: Tx, user_id: str, claim: Claim, result: dict[str, Any], now: datetime) -> None:
    """Inside the transaction that applies the job's facts (under the job's user): done,
    skipped or waiting for a chat model, as its result says (JobStatus.finished)."""
    changed = await tx.execute(
        "UPDATE jobs SET status = ?, result = ?, finished_at = ?, last_error = NULL, lease_until = NULL"
        " WHERE user_id = ? AND id = ? AND status = 'claimed' AND claimed_by = ?",
        (str(JobStatus.finished(result)), tx.json(result), now, user_id, claim.job_id, claim.worker),
    )
    if changed != 1:
        raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")


async def list_jobs(
    tx: Tx,
    user_id: str,
    status: JobStatus | None,
    limit: int,
    offset: int,
    conversation_id: str | None = None,
) -> list[Job]:
    sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE user_id = ?"
    params: list[Any] = [user_id]
    if status is not None:
        sql += " AND status = ?"
        params.append(str(status))
    if conversation_id is not None:
        sql += " AND conversation_id = ?"
        params.append(conversation_id)
    sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
    return [job_from(r) for r in await tx.all(sql, (*params, limit, offset))]


async def job_messages(tx: Tx, job: Job) -> list[Message]:
    rows = await tx.all(
        "SELECT id, role, content FROM messages WHERE user_id = ? AND conversation_id = ?"
        " AND erased_at IS NULL",  # an erased message is never learnt from
        (job.user_id, job.conversation_id),
    )
    by_id = {r[0]: Message(r[1], r[2], r[0]) for r in rows}
    return [by_id[i] for i in job.message_ids if i in by_id]


# -- the workers' heartbeats (server-wide, outside any user) --------------------------------


async def job_counts(tx: Tx) -> dict[str, int]:
    return dict(await tx.job_counts())


async def beat(tx: Tx, worker: str, at: datetime, forget_before: datetime) -> None:
    await tx.execute(
        "INSERT INTO worker_heartbeats (worker, beat_at) VALUES (?, ?)"
        " ON CONFLICT (worker) DO UPDATE SET beat_at = excluded.beat_at",
        (worker, at),
    )
    await tx.execute("DELETE FROM worker_heartbeats WHERE beat_at < ?", (forget_before,))


async def forget_worker(tx: Tx, worker: str) -> None:
    await tx.execute("DELETE FROM worker_heartbeats WHERE worker = ?", (worker,))


async def heartbeats(tx: Tx, since: datetime) -> list[datetime]:
    rows = await tx.all(
        "SELECT beat_at FROM worker_heartbeats WHERE beat_at >= ? ORDER BY beat_at DESC", (since,)
    )
    return [when(r[0]) for r in rows]
