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
from ..domain import FACT_KINDS, Claim, Conflict, FailReason, Job, dropped_words, next_utc_midnight, utcnow
from ..observe import QUIET, Observer
from ..providers.base import ModelError, ModelUnavailable
from ..store.base import FactStore, JobQueue
from ..write.writer import AUTOMATION, Writer, WriteReport

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
            if await self._over_budget(job):
                outcome = "over_budget"
                await self.store.defer_job(claim, next_utc_midnight(self.clock()))
                log.info("turn %s over its person's token budget: learnt after the next UTC midnight", job.id)
                return job
            report = await self._learn(job, claim)
            if report.retry or report.failure is not None:
                detail = "; ".join(report.problems) or "the model was unavailable"
                outcome = await self._fail(
                    job, claim, report.failure or FailReason.INTERNAL, detail, retry=report.retry
                )
            else:
                _log_finished(job, report)
        except asyncio.CancelledError:  # shutting down mid-job: give it back for later
            outcome = "released"
            await asyncio.shield(self.store.release_job(claim))
            raise
        except Conflict:
            outcome = "lost"
            log.info("turn %s: claim lost to another worker; leaving it to them", job.id)
        except ModelError as exc:  # the embedder
            retry = isinstance(exc, ModelUnavailable)
            outcome = await self._fail(job, claim, exc.reason, str(exc), retry=retry)
        except Exception as exc:  # a bug must not stop the queue: park or retry the job
            # its message may quote the person: the trace at debug level only
            log.debug("turn %s: %s", job.id, type(exc).__name__, exc_info=True)
            detail = f"{type(exc).__name__}: {exc}"
            outcome = await self._fail(job, claim, FailReason.INTERNAL, detail, retry=True)
        finally:
            self.observer.job_finished(outcome, time.perf_counter() - started)
        return job

    async def _over_budget(self, job: Job) -> bool:
        """Whether learning this job would call the chat model for a person whose tokens of the
        day are spent (a job already running may finish past the budget: it is not stopped)."""
        if job.automation or self.writer.chat is None:
            return False  # nothing to spend: automation is skipped, explicit requests cost nothing
        return await self.accounts.over_budget(job.user_id, self.clock())

    async def _learn(self, job: Job, claim: Claim) -> WriteReport:
        if job.automation:
            report = WriteReport(skipped=AUTOMATION)
            await self.store.commit(job.user_id, [], self.clock(), finish=(claim, report.summary()))
            return report
        messages = await self.store.job_messages(job)
        # learnt before without a chat model, and queued again now that there is one
        earlier = (job.result or {}).get("facts") if (job.result or {}).get("waiting_for_model") else None
        return await self.writer.learn(
            job.scope,
            messages,
            job.conversation_id,
            job.turn_at,
            await self.accounts.server_mode(),
            claim=claim,
            earlier=earlier,
        )

    async def _fail(self, job: Job, claim: Claim, reason: FailReason, error: str, *, retry: bool) -> str:
        """Retry the job later, or park it when it may not be retried or has no attempts left;
        which of the two."""
        self.observer.job_failed(str(reason))
        retry_at = None
        if retry and job.attempts < self.max_attempts:
            retry_at = self.clock() + self.backoff * (2 ** (job.attempts - 1))
        if retry_at is not None:
            then = "tried again later"
        else:  # out of attempts, or a failure that trying again would not mend
            then = "no attempt left" if retry else "not tried again: trying would not mend it"
        log.warning(
            "turn %s failed: %s (attempt %d of %d; %s)", job.id, reason, job.attempts, self.max_attempts, then
        )
        with contextlib.suppress(Conflict):
            await self.store.fail_job(claim, reason, error, retry_at)
        return "retry" if retry_at else "failed"

    async def requeue_waiting(self) -> int:
        """With a chat model, queue again the turns learnt without one (status waiting)."""
        if self.writer.chat is None:
            return 0
        count = await self.store.requeue_waiting(self.clock())
        if count:
            log.info("%d turn(s) learnt without a chat model queued again", count)
        return count

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
        It first queues again the turns waiting for a chat model (if it has one). While it
        runs, its heartbeat is written every `heartbeat`; when it stops, it goes."""
        try:
            await self.requeue_waiting()
        except Exception:
            log.exception("the turns waiting for a chat model could not be queued again")
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
        """Process every job that is due now (tests, `mnemo worker --once`, which calls
        `requeue_waiting` first, as `run` does)."""
        done = 0
        while await self.run_once() is not None:
            done += 1
        return done


def _log_finished(job: Job, report: WriteReport) -> None:
    """One line per finished turn: counts and fact ids, and what was dropped and why, never a
    word of what was said."""
    if report.skipped is not None:
        log.info("turn %s skipped: %s", job.id, report.summary()["skip_reason"])
        return
    facts = report.facts
    counts = ", ".join(f"{kind} {len(facts.get(kind, ()))}" for kind in FACT_KINDS)
    ids = ",".join(i for kind in FACT_KINDS for i in facts.get(kind, ()))
    state = "waiting for a chat model" if report.waiting_for_model else "learnt"
    # what the model proposed that was not kept: how many, and why (the reasons quote nothing)
    more = f"; dropped {dropped_words(report.dropped)}" if report.dropped else ""
    log.info("turn %s %s: %s [%s]%s", job.id, state, counts, ids, more)
