"""The one SQL store: every statement both databases share, behind the Store contract.

A backend (SQLiteStore, PostgresStore) supplies the executor — `_read` and
`_write` run a function of the shared code (sql/*.py) in one transaction,
acting for a user — and keeps only what truly differs: vector and lexical
search, keeping the indexes in step inside a commit, the job claim, entering a
user (row-level security) and the migrations.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

import numpy as np

from ...domain import (
    UNSET,
    Action,
    Agent,
    ApiKey,
    BackfillMark,
    Category,
    Change,
    Claim,
    Conversation,
    ConversationRef,
    ConversationSummary,
    DayUsage,
    Erasure,
    Event,
    Fact,
    FailReason,
    GateNotice,
    Job,
    JobStatus,
    LearntFrom,
    Message,
    NotFound,
    RecallRecord,
    RecallSummary,
    Receipt,
    Scope,
    Status,
    TokenUsage,
    User,
    new_id,
    normalise,
    utcnow,
)
from .. import batch
from ..base import Ask, ScoredFact, Unembedded
from ..fulltext import PHRASE_WORDS, message_words
from ..rows import PARSED_FACTS, when
from . import backfill, conversations, erasure, facts, jobs, people, recalls, reindex, transfer, usage
from .events import redact_events
from .tx import Row, Tx

# Finding the messages that say a text (an erasure's plan, "erase about") reads at most this
# many of them a trip to the store, and looks for at most TEXTS_PER_READ texts at once: SQLite
# runs one call at a time, and every other person's call waits for the one running.
MESSAGES_PER_READ = 500
TEXTS_PER_READ = 50
_DENSE = "dense"  # the one read of a recall's vector arms searched together (no arm's name)

P = ParamSpec("P")
T = TypeVar("T")
X = TypeVar("X", bound=Tx)  # the backend's transaction
Pending = TypeVar("Pending")  # what a backend carries from a commit's writes to after it
TxFn = Callable[Concatenate[X, P], Coroutine[Any, Any, T]]


class SQLStore(ABC, Generic[X, Pending]):
    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self._clock = clock

    # -- what a backend supplies -----------------------------------------------------------

    @abstractmethod
    async def _read(self, user_id: str | None, fn: TxFn[X, P, T], *args: P.args, **kw: P.kwargs) -> T:
        """`fn(tx, *args)` acting for `user_id` (None: nobody yet), reading only."""

    @abstractmethod
    async def _write(self, user_id: str | None, fn: TxFn[X, P, T], *args: P.args, **kw: P.kwargs) -> T:
        """`fn(tx, *args)` acting for `user_id` in one transaction that may write."""

    @abstractmethod
    async def _apply(
        self, tx: X, user_id: str, changes: list[Change], at: datetime, prev: str
    ) -> tuple[list[Event], Pending]:
        """Write the changes' facts, their events (chained from `prev`) and the indexes that
        follow the facts; Conflict for a change whose stored version moved on."""

    @abstractmethod
    async def _import(self, tx: X, user_id: str, changes: list[Change], events: list[Event]) -> Pending:
        """Write imported facts, the indexes that follow them, and their events as they were."""

    @abstractmethod
    async def _settle(self, tx: X, user_id: str, changes: list[Change], pending: Pending) -> None:
        """Last in a commit's transaction, once its checks passed (counts, generations)."""

    def _committed(self, user_id: str, changes: list[Change], pending: Pending, erased: bool) -> None:
        """Once a commit's transaction committed (in-process caches; `erased`: text was erased)."""
        if erased:
            PARSED_FACTS.forget()

    @abstractmethod
    async def open(self) -> None:
        """Connect and bring the schema up to date (migrations)."""

    @abstractmethod
    async def close(self) -> None: ...

    # -- people, agents, settings ----------------------------------------------------------

    async def ensure_user(self, name: str) -> User:
        return await self._write(None, people.ensure_user, name, self._clock())

    async def create_user(self, name: str) -> User:
        return await self._write(None, people.create_user, name, self._clock())

    async def find_user(self, name: str) -> User | None:
        return await self._read(None, people.find_user, name)

    async def get_user(self, user_id: str) -> User | None:
        return await self._read(None, people.user_row, user_id)

    async def update_user(
        self,
        user_id: str,
        *,
        memory_enabled: Any = UNSET,
        review_policy: Any = UNSET,
        record_recalls: Any = UNSET,
        gate_changes: dict[str, str] | None = None,
        review_stale: Any = UNSET,
        name: Any = UNSET,
        disabled_at: Any = UNSET,
    ) -> User:
        return await self._write(
            user_id,
            people.update_user,
            user_id,
            memory_enabled,
            review_policy,
            record_recalls,
            gate_changes,
            review_stale,
            name,
            disabled_at,
            self._clock(),
        )

    async def any_user(self) -> bool:
        async def ask(tx: X) -> bool:
            return await tx.any_user()

        return await self._read(None, ask)

    async def list_users(self) -> list[User]:
        return await self._read(None, people.all_users)

    async def create_agent(
        self,
        user_id: str,
        name: str,
        *,
        private: bool = False,
        reads_default: bool = False,
        persona: str | None = None,
        upstream_model: str | None = None,
    ) -> Agent:
        agent = Agent(new_id(), user_id, name, private, reads_default, persona, upstream_model)
        return await self._write(user_id, people.create_agent, agent, self._clock())

    async def get_agent(self, user_id: str, agent_id: str) -> Agent:
        return await self._read(user_id, people.agent_row, user_id, agent_id)

    async def update_agent(self, user_id: str, agent_id: str, **fields: object) -> Agent:
        return await self._write(user_id, people.update_agent, user_id, agent_id, fields)

    async def list_agents(self, user_id: str) -> list[Agent]:
        return await self._read(user_id, people.list_agents, user_id)

    async def add_api_key(self, key: ApiKey) -> ApiKey:
        return await self._write(key.user_id, people.add_api_key, key)

    async def key_holder(self, key_id: str) -> tuple[ApiKey, User | None] | None:
        async def read(tx: X) -> tuple[ApiKey, User | None] | None:
            key = await people.get_api_key(tx, key_id)
            return None if key is None else (key, await people.user_row(tx, key.user_id))

        return await self._read(None, read)

    async def list_api_keys(self, user_id: str) -> list[ApiKey]:
        return await self._read(user_id, people.list_api_keys, user_id)

    async def revoke_api_key(self, user_id: str, key_id: str) -> ApiKey:
        return await self._write(user_id, people.revoke_api_key, user_id, key_id, self._clock())

    async def touch_api_key(self, user_id: str, key_id: str, hour: datetime) -> None:
        await self._write(user_id, people.touch_api_key, user_id, key_id, hour)

    async def get_setting(self, key: str) -> str | None:
        return await self._read(None, people.get_setting, key)

    async def set_setting(self, key: str, value: str | None) -> None:
        await self._write(None, people.set_setting, key, value)

    async def first_setting(self, key: str, value: str) -> str:
        return await self._write(None, people.first_setting, key, value)

    # -- conversations -----------------------------------------------------------------------

    async def save_messages(
        self,
        scope: Scope,
        conversation_id: str,
        messages: Sequence[Message],
        at: datetime,
        *,
        notices: Sequence[GateNotice] = (),
        rewrites: Sequence[tuple[str, str]] = (),
    ) -> list[Message]:
        return await self._write(
            scope.user_id,
            _noticed,
            scope.user_id,
            _Gated(notices, conversation_id, rewrites),
            at,
            people.save_messages,
            scope,
            conversation_id,
            messages,
            at,
        )

    async def conversation_messages(self, user_id: str, conversation_id: str) -> list[Message]:
        return await self._read(user_id, people.conversation_messages, user_id, conversation_id)

    async def set_remember(
        self, user_id: str, conversation_id: str, agent_id: str | None, on: bool, at: datetime
    ) -> None:
        await self._write(user_id, conversations.set_remember, user_id, conversation_id, agent_id, on, at)

    async def conversation_summaries(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        agent: Any = UNSET,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[ConversationSummary]:
        return await self._read(
            user_id, conversations.summaries, user_id, ids, agent, since, until, limit, offset
        )

    # -- erasure (the writing is commit's) -------------------------------------------------------

    async def messages_saying(self, user_id: str, texts: Sequence[str]) -> list[tuple[str, str, str]]:
        """Only the messages that hold a text's words are read (the index of fulltext.
        message_words; every message for a text with none), MESSAGES_PER_READ a trip to the
        store, and `says` confirms each off the store's thread."""
        wanted = [t for t in dict.fromkeys(texts) if normalise(t)]
        found: dict[str, Row] = {}
        for i in range(0, len(wanted), TEXTS_PER_READ):
            group = wanted[i : i + TEXTS_PER_READ]
            phrases = [message_words(user_id, t)[:PHRASE_WORDS] for t in group]
            read = erasure.messages_with_words if all(phrases) else erasure.messages_after
            after = None
            while True:
                rows = await self._read(user_id, read, user_id, phrases, after, MESSAGES_PER_READ)
                if rows:
                    for row in await asyncio.to_thread(erasure.saying, rows, group):
                        found.setdefault(row[3], row)
                if len(rows) < MESSAGES_PER_READ:
                    break
                after = rows[-1][0]
        return [(r[2], r[3], r[4]) for r in sorted(found.values(), key=lambda r: (r[1], r[3]))]

    async def messages_named(self, user_id: str, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        return await self._read(user_id, erasure.messages_named, user_id, ids)

    async def message_places(
        self, user_id: str, ids: Sequence[str]
    ) -> dict[str, tuple[str, datetime, datetime | None]]:
        rows = await self._read(user_id, erasure.message_places, user_id, ids) if ids else []
        return {mid: (role, when(at), when(erased) if erased else None) for mid, role, at, erased in rows}

    async def conversation_message_ids(self, user_id: str, conversation_id: str) -> list[str] | None:
        return await self._read(user_id, erasure.conversation_message_ids, user_id, conversation_id)

    async def conversation_ids(self, user_id: str) -> list[str]:
        return await self._read(user_id, erasure.conversation_ids, user_id)

    async def erased(self, user_id: str, hashes: Sequence[str]) -> set[str]:
        if not hashes:
            return set()
        return await self._read(user_id, erasure.erased, user_id, hashes)

    async def unforget(self, user_id: str, hashes: Sequence[str]) -> None:
        await self._write(user_id, erasure.unforget, user_id, hashes)

    async def lingering(self) -> str | None:
        return None  # see SQLiteStore.lingering; PostgreSQL: docs/reliability.md, "Erasure on PostgreSQL"

    async def receipts(self, user_id: str, *, limit: int = 50, offset: int = 0) -> list[Receipt]:
        return await self._read(user_id, erasure.receipts, user_id, limit, offset)

    async def receipt(self, user_id: str, receipt_id: str) -> Receipt:
        found = await self._read(user_id, erasure.receipt, user_id, receipt_id)
        if found is None:
            raise NotFound(f"no receipt {receipt_id}")
        return found

    # -- facts: reads ------------------------------------------------------------------------

    async def get_fact(self, scope: Scope, fact_id: str) -> Fact:
        return await self._read(scope.user_id, facts.get_fact, scope, fact_id)

    async def list_facts(
        self,
        scope: Scope,
        *,
        statuses: Sequence[Status] | None = None,
        limit: int = 50,
        offset: int = 0,
        category: Category | None = None,
        pinned: bool | None = None,
    ) -> list[Fact]:
        return await self._read(
            scope.user_id, facts.list_facts, scope, statuses, limit, offset, category, pinned
        )

    async def count_facts(
        self,
        scope: Scope,
        *,
        statuses: Sequence[Status] | None = None,
        category: Category | None = None,
        pinned: bool | None = None,
    ) -> int:
        return await self._read(scope.user_id, facts.count_facts, scope, statuses, category, pinned)

    async def find_by_hash(
        self, scope: Scope, text_hash: str, *, statuses: Sequence[Status] = (Status.ACTIVE,)
    ) -> list[Fact]:
        return await self._read(scope.user_id, facts.find_by_hash, scope, text_hash, statuses)

    async def recent(self, scope: Scope, since: datetime, k: int) -> list[Fact]:
        return await self._read(scope.user_id, facts.recent, scope, since, k)

    async def during(self, scope: Scope, start: datetime, end: datetime, k: int) -> list[Fact]:
        return await self._read(scope.user_id, facts.during, scope, start, end, k)

    async def pinned(self, scope: Scope) -> list[Fact]:
        return await self._read(scope.user_id, facts.pinned, scope)

    async def fact_ids_starting(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        return await self._read(scope.user_id, facts.ids_starting, scope, prefix, limit)

    async def owned_ids_starting(self, kind: str, user_id: str, prefix: str, limit: int) -> list[str]:
        return await self._read(user_id, facts.owned_ids_starting, kind, user_id, prefix, limit)

    async def learnt_in(self, scope: Scope, conversation_id: str, since: datetime, limit: int) -> list[Fact]:
        return await self._read(scope.user_id, facts.learnt_in, scope, conversation_id, since, limit)

    async def unheard(self, scope: Scope, before: Mapping[Category, datetime], limit: int) -> list[Fact]:
        return await self._read(scope.user_id, facts.unheard, scope, before, limit)

    async def nearest(self, scope: Scope, vector: np.ndarray, model: str, k: int) -> list[ScoredFact]:
        return await self._read(scope.user_id, self._nearest, scope, vector, model, k)

    async def lexical(self, scope: Scope, query: str, k: int) -> list[ScoredFact]:
        return await self._read(scope.user_id, self._lexical, scope, query, k)

    async def arms(
        self, scope: Scope, asks: Mapping[str, Ask], timed: Callable[[str, float], None]
    ) -> dict[str, list[Any]]:
        searches: dict[str, Callable[..., Coroutine[Any, Any, list[Any]]]] = {
            "nearest": self._nearest,
            "lexical": self._lexical,
            "recent": facts.recent,
            "during": facts.during,
            "pinned": facts.pinned,
        }
        settled: list[Scope] = []

        async def decided(tx: X) -> Scope:
            """The scope with its agent rule decided, read once: on SQLite, where the reads run
            one after another, the first read's agents serve the others."""
            if not settled:
                keys = await facts.agent_keys(tx, scope)
                settled.append(scope if keys is None else dataclasses.replace(scope, readable=tuple(keys)))
            return settled[0]

        def read(ask: Ask) -> Callable[[X], Coroutine[Any, Any, list[Any]]]:
            search = searches[ask.method]

            async def run(tx: X) -> list[Any]:
                return await search(tx, await decided(tx), *ask.args)

            return run

        reads = {arm: read(ask) for arm, ask in asks.items()}
        dense = [arm for arm, ask in asks.items() if ask.method == "nearest"]
        together = self.dense_together and len(dense) > 1 and len({asks[a].args[1:] for a in dense}) == 1
        if not together:
            return await self._reads(scope.user_id, reads, timed)
        # one search for every vector arm (same model, same depth): each arm's time is the group's
        model, k = asks[dense[0]].args[1:]

        async def searched(tx: X) -> list[Any]:
            vectors = np.stack([asks[a].args[0] for a in dense])
            return await self._nearest_many(tx, await decided(tx), vectors, model, k)

        def each_timed(name: str, seconds: float) -> None:
            for arm in dense if name == _DENSE else (name,):
                timed(arm, seconds)

        rest = {arm: r for arm, r in reads.items() if arm not in dense}
        answers = await self._reads(scope.user_id, {**rest, _DENSE: searched}, each_timed)
        return {**answers, **dict(zip(dense, answers.pop(_DENSE), strict=True))}

    async def _reads(
        self,
        user_id: str,
        reads: Mapping[str, Callable[[X], Coroutine[Any, Any, T]]],
        timed: Callable[[str, float], None],
    ) -> dict[str, T]:
        """`reads[name](tx)` for each name, each in a transaction of its own, all at once."""

        async def one(name: str) -> T:
            started = time.perf_counter()
            try:
                return await self._read(user_id, reads[name])
            finally:
                timed(name, time.perf_counter() - started)

        return dict(zip(reads, await asyncio.gather(*(one(name) for name in reads)), strict=True))

    @abstractmethod
    async def _nearest(self, tx: X, scope: Scope, vector: np.ndarray, model: str, k: int) -> list[ScoredFact]:
        """SearchStore.nearest, in `tx`."""

    # Whether a recall's vector arms are one search (`_nearest_many`): where reads run one after
    # another anyway (SQLite) one scan serves them all; where each arm has a pooled connection
    # of its own (PostgreSQL) they run at once.
    dense_together = False

    async def _nearest_many(
        self, tx: X, scope: Scope, vectors: np.ndarray, model: str, k: int
    ) -> list[list[ScoredFact]]:
        """`_nearest` for each vector (a row of `vectors`), in `tx`."""
        return [await self._nearest(tx, scope, v, model, k) for v in vectors]

    @abstractmethod
    async def _lexical(self, tx: X, scope: Scope, query: str, k: int) -> list[ScoredFact]:
        """SearchStore.lexical, in `tx`."""

    @abstractmethod
    async def vectors(self, scope: Scope, fact_ids: Sequence[str], model: str) -> dict[str, np.ndarray]: ...

    async def events(
        self, user_id: str, *, fact_id: str | None = None, until: datetime | None = None
    ) -> list[Event]:
        return await self._read(user_id, facts.events, user_id, fact_id, until)

    async def chain_head(self, user_id: str) -> str:
        return await self._read(user_id, facts.head, user_id)

    # -- facts: writes -----------------------------------------------------------------------

    async def commit(
        self,
        user_id: str,
        changes: Sequence[Change],
        at: datetime,
        *,
        finish: tuple[Claim, dict[str, Any]] | None = None,
        mark: BackfillMark | None = None,
        retire: str | None = None,
        erase: Erasure | None = None,
        learnt_from: LearntFrom | None = None,
        notices: Sequence[GateNotice] = (),
    ) -> list[Event]:
        if not (changes or notices) and finish is None and mark is None and retire is None and erase is None:
            return []
        batch.check(user_id, changes)
        return await self._write(
            user_id,
            self._commit,
            user_id,
            list(changes),
            at,
            finish,
            mark,
            retire,
            erase,
            learnt_from,
            notices,
        )

    async def _commit(
        self,
        tx: X,
        user_id: str,
        changes: list[Change],
        at: datetime,
        finish: tuple[Claim, dict[str, Any]] | None,
        mark: BackfillMark | None,
        retire: str | None,
        erase: Erasure | None,
        learnt_from: LearntFrom | None,
        notices: Sequence[GateNotice],
    ) -> list[Event]:
        # one writer per user at a time: the chain's head is read and extended under this lock
        await tx.lock_user(user_id)
        if learnt_from is not None:
            await erasure.check_unerased(tx, user_id, learnt_from)
        if finish is not None:
            claim, result = finish
            await jobs.finish_job(tx, user_id, claim, {**result, "events": len(changes)}, self._clock())
        if mark is not None:
            await backfill.advance_mark(tx, user_id, mark, self._clock())
        # first, as it may seal the log again (see mnemo.audit)
        await redact_events(tx, user_id, [c.fact.id for c in changes if c.redact])
        head = await facts.head(tx, user_id)
        events, pending = await self._apply(tx, user_id, changes, at, head)
        events += await facts.record_notices(tx, user_id, notices, at, events[-1].hash if events else head)
        await facts.check_unique(tx, user_id, changes)
        await facts.check_agents(tx, user_id, changes)
        if retire is not None:
            await people.retire_agent(tx, user_id, retire, self._clock())
        purged = [c.fact.id for c in changes if c.fact.purged]
        if purged:  # which assistant was given an erased fact is the person's data too
            await recalls.forget_facts(tx, user_id, purged)
        if erase is not None:
            if erase.keys:  # everything
                await recalls.forget_all(tx, user_id)
            counts = await erasure.erase(tx, user_id, erase, at)
            if erase.seal is not None:
                await erasure.save_receipt(tx, erase.seal(events[-1].hash if events else head, counts))
        await self._settle(tx, user_id, changes, pending)
        erased = erase is not None or any(c.redact for c in changes)
        tx.after_commit(lambda: self._committed(user_id, changes, pending, erased))
        return events

    # -- the recall log -------------------------------------------------------------------------------

    async def record_recalls(
        self, user_id: str, found: Sequence[tuple[str, RecallRecord]], keep_after: datetime
    ) -> int:
        return await self._write(user_id, recalls.record, user_id, found, keep_after)

    async def recall_summary(
        self, user_id: str, fact_id: str, since: datetime, keep_after: datetime
    ) -> RecallSummary:
        return await self._read(user_id, recalls.summary, user_id, fact_id, since, keep_after)

    async def recall_log(
        self,
        user_id: str,
        keep_after: datetime,
        *,
        after: tuple[datetime, str, str] | None = None,
        limit: int = 500,
    ) -> list[tuple[str, RecallRecord]]:
        return await self._read(user_id, recalls.log, user_id, keep_after, after, limit)

    # -- the durable queue of turns (see mnemo.batch.jobs) -------------------------------------------

    async def enqueue_turn(
        self,
        scope: Scope,
        conversation_id: str,
        messages: Sequence[Message],
        at: datetime,
        *,
        automation: bool = False,
        job_id: str | None = None,
        notices: Sequence[GateNotice] = (),
        rewrites: Sequence[tuple[str, str]] = (),
        max_queued: int = 0,
        erased_since: datetime | None = None,
    ) -> Job:
        """Store the turn's messages and its job (under `job_id`, or a new id) in one transaction,
        with the notices of what the gate masked in them."""
        return await self._write(
            scope.user_id,
            _noticed,
            scope.user_id,
            _Gated(notices, conversation_id, rewrites, erased_since),
            at,
            jobs.enqueue_turn,
            scope,
            conversation_id,
            messages,
            at,
            automation,
            self._clock(),
            job_id,
            max_queued,
        )

    async def queued_turns(self, user_id: str) -> int:
        return await self._read(user_id, jobs.queued_turns, user_id)

    async def user_job_counts(self, user_id: str) -> dict[str, int]:
        return await self._read(user_id, jobs.user_job_counts, user_id)

    @abstractmethod
    async def claim_job(self, worker: str, now: datetime, lease: timedelta) -> Job | None:
        """A due job (or one whose claimant's lease ran out), now leased to `worker`; only a
        user's earliest open job is due: one turn per person at a time, in order. People are
        taken in turn: the one whose last claim is oldest (or who has none) first, then the
        oldest due (see jobs.stamp_claim)."""

    async def release_job(self, claim: Claim) -> None:
        await self._write(None, jobs.release_job, claim)

    async def fail_job(self, claim: Claim, reason: FailReason, error: str, retry_at: datetime | None) -> Job:
        return await self._write(None, jobs.fail_job, claim, reason, error, retry_at, self._clock())

    async def defer_job(self, claim: Claim, until: datetime) -> Job:
        return await self._write(None, jobs.defer_job, claim, until)

    async def retry_job(self, user_id: str, job_id: str) -> Job:
        return await self._write(user_id, jobs.retry_job, user_id, job_id, self._clock())

    async def get_job(self, user_id: str, job_id: str) -> Job:
        return await self._read(user_id, jobs.job, user_id, job_id)

    async def list_jobs(
        self,
        user_id: str,
        *,
        status: JobStatus | None = None,
        limit: int = 50,
        offset: int = 0,
        conversation_id: str | None = None,
    ) -> list[Job]:
        return await self._read(user_id, jobs.list_jobs, user_id, status, limit, offset, conversation_id)

    async def job_messages(self, job: Job) -> list[Message]:
        return await self._read(job.user_id, jobs.job_messages, job)

    async def job_counts(self) -> dict[str, int]:
        return await self._read(None, jobs.job_counts)

    async def beat(self, worker: str, at: datetime, forget_before: datetime) -> None:
        await self._write(None, jobs.beat, worker, at, forget_before)

    async def forget_worker(self, worker: str) -> None:
        await self._write(None, jobs.forget_worker, worker)

    async def heartbeats(self, since: datetime) -> list[datetime]:
        return await self._read(None, jobs.heartbeats, since)

    # -- tokens spent on learning, and budgets ---------------------------------------------------------

    async def add_usage(self, user_id: str, day: date, spent: TokenUsage) -> None:
        await self._write(user_id, usage.add, user_id, day, spent)

    async def usage_days(self, user_id: str, since: date) -> list[DayUsage]:
        return await self._read(user_id, usage.days, user_id, since)

    async def token_budget(self, user_id: str) -> int | None:
        return await self._read(user_id, usage.budget, user_id)

    async def set_token_budget(self, user_id: str, tokens: int | None) -> None:
        await self._write(user_id, usage.set_budget, user_id, tokens, self._clock())

    # -- backfill (see mnemo.batch.backfill) -----------------------------------------------------------

    async def users_with_conversations(self) -> list[User]:
        return await self._read(None, people.users_with, "conversations")

    async def conversations_since(self, user_id: str, since: datetime | None) -> list[ConversationRef]:
        return await self._read(user_id, backfill.conversations_since, user_id, since)

    async def unlearnt_before(self, user_id: str, since: datetime) -> tuple[int, int, datetime | None]:
        return await self._read(user_id, backfill.unlearnt_before, user_id, since)

    async def timed_messages(
        self, user_id: str, conversation_ids: Sequence[str]
    ) -> dict[str, list[tuple[Message, datetime]]]:
        return await self._read(user_id, backfill.timed_messages, user_id, conversation_ids)

    async def backfill_marks(self, user_id: str, conversation_ids: Sequence[str]) -> list[BackfillMark]:
        return await self._read(user_id, backfill.backfill_marks, user_id, conversation_ids)

    # -- import and export (see mnemo.batch.transfer) ----------------------------------------------------

    async def list_conversations(
        self, user_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> list[Conversation]:
        return await self._read(user_id, transfer.list_conversations, user_id, after, limit)

    async def import_conversation(
        self,
        conversation: Conversation,
        notices: Sequence[GateNotice] = (),
        rewrites: Sequence[tuple[str, str]] = (),
    ) -> int:
        user_id = conversation.user_id
        gated = _Gated(notices, conversation.id, rewrites)
        return await self._write(
            user_id, _noticed, user_id, gated, self._clock(), transfer.import_conversation, conversation
        )

    async def import_user(self, user: User) -> User:
        return await self._write(user.id, people.import_user, user, self._clock())

    async def import_agent(self, agent: Agent) -> bool:
        return await self._write(agent.user_id, people.import_agent, agent, self._clock())

    async def import_facts(
        self, user_id: str, facts: Sequence[tuple[Fact, np.ndarray | None]], events: Sequence[Event]
    ) -> None:
        """Insert facts (with their vectors) and events as they were, in one transaction: the
        events keep their time, digest and hashes, in the order given, and must continue the
        user's chain (Conflict otherwise); a fact already there is a Conflict."""
        changes = [Change(f, Action.CREATE, "import", vector=v) for f, v in facts]
        await self._write(user_id, self._import_facts, user_id, changes, list(events))

    async def _import_facts(self, tx: X, user_id: str, changes: list[Change], events: list[Event]) -> None:
        await transfer.check_import(tx, user_id, [c.fact for c in changes], events)
        pending = await self._import(tx, user_id, changes, events)
        await self._settle(tx, user_id, changes, pending)
        tx.after_commit(lambda: self._committed(user_id, changes, pending, False))

    # -- reindex (see mnemo.batch.reindex) --------------------------------------------------------------

    async def users_with_facts(self) -> list[User]:
        return await self._read(None, people.users_with, "facts")

    async def unembedded(self, user_id: str, model: str, after: int, limit: int) -> list[Unembedded]:
        return await self._read(user_id, reindex.unembedded, user_id, model, after, limit)

    async def vector_models(self, user_id: str) -> dict[str, int]:
        return await self._read(user_id, reindex.vector_models, user_id)

    @abstractmethod
    async def add_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[Unembedded, np.ndarray]]
    ) -> int: ...

    @abstractmethod
    async def drop_vectors(self, user_id: str, keep: str) -> int: ...


@dataclasses.dataclass(frozen=True, slots=True)
class _Gated:
    """What the gate did to the messages being written: its notices for the user's log, and
    the conversation's earlier messages it masked (id, content)."""

    notices: Sequence[GateNotice]
    conversation_id: str
    rewrites: Sequence[tuple[str, str]] = dataclasses.field(repr=False)
    erased_since: datetime | None = None  # see Turn.began


async def _noticed(
    tx: Tx, user_id: str, gated: _Gated, at: datetime, step: Callable[..., Any], *args: Any
) -> Any:
    """`step` and, in the same transaction, the gate's notices in the user's log (the user's
    lock taken first, as a commit takes it, when there are any), and the earlier messages it
    masked rewritten; ErasedMeanwhile, nothing written, when the person erased the conversation
    or everything at or after `erased_since` (checked under the user's lock, which an erasure's
    commit takes too)."""
    if gated.notices or gated.erased_since is not None:
        await tx.lock_user(user_id)
    if gated.erased_since is not None:
        await erasure.check_not_erased_since(tx, user_id, gated.conversation_id, gated.erased_since)
    out = await step(tx, *args)
    await facts.record_notices(tx, user_id, gated.notices, at)
    await people.rewrite_messages(tx, user_id, gated.conversation_id, gated.rewrites)
    return out
