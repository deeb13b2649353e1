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
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from ..accounts import Accounts
from ..domain import Claim, Conflict, Job, utcnow
from ..observe import QUIET, Observer
from ..providers.base import ModelError, ModelUnavailable
from ..store.base import FactStore, JobQueue
from ..write.writer import Writer, WriteReport

log = logging.getLogger(__name__)

FORGET_AFTER = timedelta(days=1)  # a worker silent this long loses its heartbeat row


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
        heartbeat: timedelta = timedelta(seconds=15),
        clock: Callable[[], datetime] = utcnow,
        observer: Observer = QUIET,
    ) -> None:
        self.store = store
        self.writer = writer
        self.accounts = accounts  # the server's memory mode
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease = lease
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.poll = poll
        self.heartbeat = heartbeat
        self.clock = clock
        self.observer = observer
        self._wake = asyncio.Event()
        self._beaten: datetime | None = None  # when this worker last wrote its heartbeat

    def wake(self) -> None:
        """A job was just queued: look now rather than at the next poll."""
        self._wake.set()

    async def run_once(self) -> Job | None:
        """Claim and process one due job; None when there was none."""
        job = await self.store.claim_job(self.name, self.clock(), self.lease)
        if job is None:
            return None
        claim = Claim(job.id, self.name)
        started, outcome = time.perf_counter(), "done"
        try:
            report = await self._learn(job, claim)
            if report.retry:
                self.observer.job_failed("model_unavailable")
                problems = "; ".join(report.problems) or "the model was unavailable"
                outcome = await self._fail(job, claim, problems)
        except asyncio.CancelledError:  # shutting down mid-job: give it back for later
            outcome = "released"
            await asyncio.shield(self.store.release_job(claim))
            raise
        except Conflict:
            outcome = "lost"
            log.info("job %s: claim lost to another worker; leaving it to them", job.id)
        except Exception as exc:  # a bug must not stop the queue: park or retry the job
            log.exception("job %s failed", job.id)
            self.observer.job_failed(_reason(exc))
            outcome = await self._fail(job, claim, f"{type(exc).__name__}: {exc}")
        finally:
            self.observer.job_finished(outcome, time.perf_counter() - started)
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

    async def _fail(self, job: Job, claim: Claim, error: str) -> str:
        """Retry the job later, or park it when it has no attempts left; which of the two."""
        retry_at = None
        if job.attempts < self.max_attempts:
            retry_at = self.clock() + self.backoff * (2 ** (job.attempts - 1))
        with contextlib.suppress(Conflict):
            await self.store.fail_job(claim, error, retry_at)
        return "retry" if retry_at else "failed"

    async def beat(self) -> None:
        """Write this worker's heartbeat, if the last one is `heartbeat` old (not on every poll);
        /readyz reads them. A store that cannot be written is logged, and tried at the next poll."""
        now = self.clock()
        if self._beaten is not None and now - self._beaten < self.heartbeat:
            return
        try:
            await self.store.beat(self.name, now, now - FORGET_AFTER)
            self._beaten = now
        except Exception:
            log.warning("worker %s could not write its heartbeat", self.name, exc_info=True)

    async def run(self, stop: asyncio.Event) -> None:
        """Process jobs until `stop` is set; then finish the current one or give it back.
        While it runs, its heartbeat is written every `heartbeat`; when it stops, it goes."""
        try:
            while not stop.is_set():
                await self.beat()
                try:
                    job = await self.run_once()
                except Exception:
                    log.exception("the job queue could not be read; trying again shortly")
                    job = None
                if job is None:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._either(stop), timeout=self.poll)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.store.forget_worker(self.name))

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


def _reason(exc: BaseException) -> str:
    """A failure's category, for the metrics: never its message."""
    if isinstance(exc, ModelUnavailable):
        return "model_unavailable"
    if isinstance(exc, ModelError):
        return "model_error"
    return "error"
