"""The durable queue of turns in the PostgreSQL store, shared by any number of workers.

As in SQLite (see sqlite_jobs.py): a turn's messages and its job are written
in one transaction, and a job is finished in the transaction that applies
its facts. Here several processes may claim at once: the claim takes the
oldest due row that no other transaction has locked (FOR UPDATE SKIP LOCKED,
inside mnemo_claim_job), so no job is handed out twice and no worker waits
on another's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta

import psycopg

from ..domain import Claim, Conflict, Job, JobStatus, Message, NotFound, Scope, new_id
from .postgres_rows import JOB_COLUMNS, job_from


class JobsMixin:
    """Part of PostgresStore (it supplies `_tx`, `_as_user`, `_clock` and `_save_messages`)."""

    async def enqueue_turn(
        self,
        scope: Scope,
        conversation_id: str,
        messages: Sequence[Message],
        at: datetime,
        *,
        automation: bool = False,
    ) -> Job:
        async with self._tx(scope.user_id) as cur:
            saved = await self._save_messages(cur, scope, conversation_id, messages, at)
            job_id = new_id()
            now = self._clock()
            await cur.execute(
                "INSERT INTO jobs (id, user_id, agent_id, conversation_id, message_ids, automation,"
                " turn_at, status, next_attempt_at, created_at)"
                " VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s)",
                (
                    job_id,
                    scope.user_id,
                    scope.agent_id,
                    conversation_id,
                    json.dumps([m.id for m in saved]),
                    automation,
                    at,
                    str(JobStatus.PENDING),
                    now,
                    now,
                ),
            )
            return await self._job(cur, scope.user_id, job_id)

    async def claim_job(self, worker: str, now: datetime, lease: timedelta) -> Job | None:
        """The oldest due job (or one whose claimant's lease ran out), now leased to `worker`."""
        async with self._tx() as cur:
            await cur.execute(
                "SELECT job_id, user_id FROM mnemo_claim_job(%s, %s, %s)", (worker, now, now + lease)
            )
            row = await cur.fetchone()
            if row is None:
                return None
            await self._as_user(cur, row[1])
            return await self._job(cur, row[1], row[0])

    async def _claimant(self, cur: psycopg.AsyncCursor, claim: Claim) -> str | None:
        """Enter the claimed job's user and return it, if `claim` still holds the job."""
        await cur.execute("SELECT mnemo_claimant(%s, %s)", (claim.job_id, claim.worker))
        (user_id,) = await cur.fetchone()
        if user_id is not None:
            await self._as_user(cur, user_id)
        return user_id

    async def release_job(self, claim: Claim) -> None:
        """Give a claimed job back untouched (shutdown): it does not count as an attempt."""
        async with self._tx() as cur:
            user_id = await self._claimant(cur, claim)
            if user_id is None:
                return
            await cur.execute(
                "UPDATE jobs SET status = 'pending', claimed_by = NULL, lease_until = NULL,"
                " attempts = attempts - 1"
                " WHERE user_id = %s AND id = %s AND status = 'claimed' AND claimed_by = %s",
                (user_id, claim.job_id, claim.worker),
            )

    async def fail_job(self, claim: Claim, error: str, retry_at: datetime | None) -> Job:
        """Try again at `retry_at`, or park the job as failed when it is None."""
        if retry_at is None:
            sql, when = "status = 'failed', finished_at = %s", self._clock()
        else:
            sql, when = "status = 'pending', next_attempt_at = %s", retry_at
        async with self._tx() as cur:
            user_id = await self._claimant(cur, claim)
            if user_id is not None:
                await cur.execute(
                    f"UPDATE jobs SET {sql}, last_error = %s, claimed_by = NULL, lease_until = NULL"
                    " WHERE user_id = %s AND id = %s AND status = 'claimed' AND claimed_by = %s",
                    (when, error[:2000], user_id, claim.job_id, claim.worker),
                )
                if cur.rowcount == 1:
                    return await self._job(cur, user_id, claim.job_id)
        raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")

    async def _finish_job(
        self, cur: psycopg.AsyncCursor, user_id: str, claim: Claim, result: dict, now: datetime
    ) -> None:
        """Inside the transaction that applies the job's facts (under the job's user)."""
        await cur.execute(
            "UPDATE jobs SET status = 'done', result = %s::jsonb, finished_at = %s, last_error = NULL,"
            " lease_until = NULL WHERE user_id = %s AND id = %s AND status = 'claimed' AND claimed_by = %s",
            (json.dumps(result), now, user_id, claim.job_id, claim.worker),
        )
        if cur.rowcount != 1:
            raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")

    async def get_job(self, user_id: str, job_id: str) -> Job:
        async with self._tx(user_id) as cur:
            return await self._job(cur, user_id, job_id)

    async def list_jobs(
        self, user_id: str, *, status: JobStatus | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE user_id = %s"
        params: list = [user_id]
        if status is not None:
            sql += " AND status = %s"
            params.append(str(status))
        sql += " ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s"
        async with self._tx(user_id) as cur:
            await cur.execute(sql, (*params, limit, offset))
            return [job_from(r) for r in await cur.fetchall()]

    async def job_messages(self, job: Job) -> list[Message]:
        async with self._tx(job.user_id) as cur:
            await cur.execute(
                "SELECT id, role, content FROM messages WHERE user_id = %s AND conversation_id = %s",
                (job.user_id, job.conversation_id),
            )
            by_id = {r[0]: Message(r[1], r[2], r[0]) for r in await cur.fetchall()}
        return [by_id[i] for i in job.message_ids if i in by_id]

    async def _job(self, cur: psycopg.AsyncCursor, user_id: str, job_id: str) -> Job:
        await cur.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE user_id = %s AND id = %s", (user_id, job_id))
        row = await cur.fetchone()
        if row is None:
            raise NotFound(f"no job {job_id}")
        return job_from(row)
