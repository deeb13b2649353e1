"""The durable queue of turns to learn from, in the SQLite store.

A turn's messages and its job are written in one transaction; a worker claims
a job with a lease; finishing it happens inside the same transaction as the
facts it produced (see SQLiteStore.commit), so a crash at any point either
leaves the job to be claimed again or leaves it done with its facts — never
facts without a finished job.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta

from ..domain import Claim, Conflict, Job, JobStatus, Message, NotFound, Scope, new_id
from .sqlite_rows import JOB_COLUMNS, job_from, ts


class JobsMixin:
    """Part of SQLiteStore (it supplies `_run`, `_tx`, `_conn`, `_clock` and `_save_messages`)."""

    async def enqueue_turn(
        self,
        scope: Scope,
        conversation_id: str,
        messages: Sequence[Message],
        at: datetime,
        *,
        automation: bool = False,
    ) -> Job:
        def insert(cur):
            saved = self._save_messages(cur, scope, conversation_id, messages, at)
            job_id = new_id()
            now = ts(self._clock())
            cur.execute(
                "INSERT INTO jobs (id, user_id, agent_id, conversation_id, message_ids, automation,"
                " turn_at, status, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    scope.user_id,
                    scope.agent_id,
                    conversation_id,
                    json.dumps([m.id for m in saved]),
                    int(automation),
                    ts(at),
                    str(JobStatus.PENDING),
                    now,
                    now,
                ),
            )
            return self._job(cur, job_id)

        return await self._run(self._tx, insert)

    async def claim_job(self, worker: str, now: datetime, lease: timedelta) -> Job | None:
        """The oldest due job (or one whose claimant's lease ran out), now leased to `worker`."""

        def claim(cur):
            # only a user's earliest open job is due: one turn per person at a time, in order
            row = cur.execute(
                "SELECT d.id FROM jobs d WHERE ((d.status = 'pending' AND d.next_attempt_at <= ?)"
                " OR (d.status = 'claimed' AND d.lease_until < ?)) AND NOT EXISTS (SELECT 1 FROM jobs e"
                " WHERE e.user_id = d.user_id AND e.id < d.id AND e.status IN ('pending', 'claimed'))"
                " ORDER BY d.next_attempt_at LIMIT 1",
                (ts(now), ts(now)),
            ).fetchone()
            if row is None:
                return None
            cur.execute(
                "UPDATE jobs SET status = 'claimed', claimed_by = ?, lease_until = ?,"
                " attempts = attempts + 1 WHERE id = ?",
                (worker, ts(now + lease), row[0]),
            )
            return self._job(cur, row[0])

        return await self._run(self._tx, claim)

    async def release_job(self, claim: Claim) -> None:
        """Give a claimed job back untouched (shutdown): it does not count as an attempt."""

        def release(cur):
            cur.execute(
                "UPDATE jobs SET status = 'pending', claimed_by = NULL, lease_until = NULL,"
                " attempts = attempts - 1 WHERE id = ? AND status = 'claimed' AND claimed_by = ?",
                (claim.job_id, claim.worker),
            )

        await self._run(self._tx, release)

    async def fail_job(self, claim: Claim, error: str, retry_at: datetime | None) -> Job:
        """Try again at `retry_at`, or park the job as failed when it is None."""

        def fail(cur):
            if retry_at is None:
                sql = "status = 'failed', finished_at = ?"
                when = ts(self._clock())
            else:
                sql = "status = 'pending', next_attempt_at = ?"
                when = ts(retry_at)
            cur.execute(
                f"UPDATE jobs SET {sql}, last_error = ?, claimed_by = NULL, lease_until = NULL"
                " WHERE id = ? AND status = 'claimed' AND claimed_by = ?",
                (when, error[:2000], claim.job_id, claim.worker),
            )
            if cur.rowcount != 1:
                raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")
            return self._job(cur, claim.job_id)

        return await self._run(self._tx, fail)

    def _finish_job(self, cur, claim: Claim, result: dict, now: datetime) -> None:
        """Inside the transaction that applies the job's facts."""
        cur.execute(
            "UPDATE jobs SET status = 'done', result = ?, finished_at = ?, last_error = NULL,"
            " lease_until = NULL WHERE id = ? AND status = 'claimed' AND claimed_by = ?",
            (json.dumps(result), ts(now), claim.job_id, claim.worker),
        )
        if cur.rowcount != 1:
            raise Conflict(f"job {claim.job_id} is no longer held by {claim.worker}")

    async def get_job(self, user_id: str, job_id: str) -> Job:
        def get():
            job = self._job(self._conn, job_id)
            if job.user_id != user_id:
                raise NotFound(f"no job {job_id}")
            return job

        return await self._run(get)

    async def list_jobs(
        self, user_id: str, *, status: JobStatus | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        def select():
            sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE user_id = ?"
            params: list = [user_id]
            if status is not None:
                sql += " AND status = ?"
                params.append(str(status))
            sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
            return [job_from(r) for r in self._conn.execute(sql, (*params, limit, offset))]

        return await self._run(select)

    async def job_messages(self, job: Job) -> list[Message]:
        def select():
            by_id = {
                r[0]: Message(r[1], r[2], r[0])
                for r in self._conn.execute(
                    "SELECT id, role, content FROM messages WHERE user_id = ? AND conversation_id = ?",
                    (job.user_id, job.conversation_id),
                )
            }
            return [by_id[i] for i in job.message_ids if i in by_id]

        return await self._run(select)

    def _job(self, cur, job_id: str) -> Job:
        row = cur.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id}")
        return job_from(row)
