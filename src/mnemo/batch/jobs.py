"""The worker that learns from stored turns: claims jobs, retries with backoff, parks failures.

Each job is a turn stored together with it (Memory.submit, which wakes the
workers of its process). Finishing a job is part of the transaction that
applies its facts, so killing the process at any point loses no turn and
applies none twice: an unfinished job's lease runs out and another worker (or
this one, restarted) claims it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from ..accounts import Accounts
from ..domain import Claim, Conflict, Job, utcnow
from ..store.base import FactStore, JobQueue
from ..write.writer import Writer, WriteReport

log = logging.getLogger(__name__)


class QueueStore(JobQueue, FactStore, Protocol):
    """What a worker uses: the queue, and the commit that finishes a job with its facts."""


class Worker:
    """Over the store's queue, learning with the writer; `mnemo.build.Core.worker` builds one."""

    def __init__(
        self,
        store: QueueStore,
        writer: Writer,
        accounts: Accounts,
        *,
        name: str | None = None,
        lease: timedelta = timedelta(seconds=120),
        max_attempts: int = 5,
        backoff: timedelta = timedelta(seconds=5),
        poll: float = 1.0,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.store = store
        self.writer = writer
        self.accounts = accounts  # the server's memory mode
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease = lease
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.poll = poll
        self.clock = clock
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """A job was just queued: look now rather than at the next poll."""
        self._wake.set()

    async def run_once(self) -> Job | None:
        """Claim and process one due job; None when there was none."""
        job = await self.store.claim_job(self.name, self.clock(), self.lease)
        if job is None:
            return None
        claim = Claim(job.id, self.name)
        try:
            report = await self._learn(job, claim)
            if report.retry:
                await self._fail(job, claim, "; ".join(report.problems) or "the model was unavailable")
        except asyncio.CancelledError:  # shutting down mid-job: give it back for later
            await asyncio.shield(self.store.release_job(claim))
            raise
        except Conflict:
            log.info("job %s: claim lost to another worker; leaving it to them", job.id)
        except Exception as exc:  # a bug must not stop the queue: park or retry the job
            log.exception("job %s failed", job.id)
            await self._fail(job, claim, f"{type(exc).__name__}: {exc}")
        return job

    async def _learn(self, job: Job, claim: Claim) -> WriteReport:
        if job.automation:
            report = WriteReport(skipped="automation turns never write memory")
            await self.store.commit(job.user_id, [], self.clock(), finish=(claim, report.summary()))
            return report
        messages = await self.store.job_messages(job)
        return await self.writer.learn(
            job.scope,
            messages,
            job.conversation_id,
            job.turn_at,
            await self.accounts.server_mode(),
            claim=claim,
        )

    async def _fail(self, job: Job, claim: Claim, error: str) -> None:
        retry_at = None
        if job.attempts < self.max_attempts:
            retry_at = self.clock() + self.backoff * (2 ** (job.attempts - 1))
        with contextlib.suppress(Conflict):
            await self.store.fail_job(claim, error, retry_at)

    async def run(self, stop: asyncio.Event) -> None:
        """Process jobs until `stop` is set; then finish the current one or give it back."""
        while not stop.is_set():
            try:
                job = await self.run_once()
            except Exception:
                log.exception("the job queue could not be read; trying again shortly")
                job = None
            if job is None:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._either(stop), timeout=self.poll)

    async def _either(self, stop: asyncio.Event) -> None:
        waits = [asyncio.create_task(stop.wait()), asyncio.create_task(self._wake.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def drain(self) -> int:
        """Process every job that is due now (tests, `mnemo worker --once`)."""
        done = 0
        while await self.run_once() is not None:
            done += 1
        return done
