"""The Store contract, in roles: each consumer asks for the role it uses.

A fact read takes the `Scope` it reads for, and sees what the scope's agent
rule allows (`domain.readable_agent_keys`; `Scope(user, all_agents=True)` is
the person's own full view). Everything else names its user by id, but for the
few questions asked before a user is known (a name, an API key id, the next
job, who has facts or conversations at all).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Literal, Protocol

import numpy as np

from ..domain import (
    UNSET,
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
    RecallRecord,
    RecallSummary,
    Receipt,
    ReviewPolicy,
    Scope,
    Status,
    TokenUsage,
    User,
)


@dataclass(frozen=True, slots=True)
class ScoredFact:
    fact: Fact
    score: float


@dataclass(frozen=True, slots=True)
class Unembedded:
    """A fact without a vector of some model, as `mnemo reindex` reads it."""

    rowid: int  # the order reindex walks a user's facts in
    fact_id: str
    version: int  # the vector is written only while the fact is still at this version
    text: str


class AccountStore(Protocol):
    """People, their agents, their API keys (only hashes of the secrets), server settings."""

    async def ensure_user(self, name: str) -> User: ...
    async def create_user(self, name: str) -> User:
        """A new user of that name; Conflict if someone has the name (checked and written in
        one transaction, under the names' lock a rename takes too)."""

    async def find_user(self, name: str) -> User | None: ...
    async def get_user(self, user_id: str) -> User | None: ...
    async def update_user(
        self,
        user_id: str,
        *,
        memory_enabled: bool | object | None = UNSET,
        review_policy: ReviewPolicy | object = UNSET,
        record_recalls: bool | object = UNSET,
        gate_changes: dict[str, str] | None = None,
        review_stale: bool | object = UNSET,
        name: str | object = UNSET,
        disabled_at: datetime | object | None = UNSET,
    ) -> User:
        """Change the user's switches (and, for the administrator, their name and whether the
        account is disabled: Conflict for a name someone else has); `record_recalls` off
        deletes their recall log (and when each fact was last recalled) with it;
        `review_stale`: the "Still true?" list; `gate_changes`: category → action for the
        sensitive-data gate, merged into what the user chose before in the same transaction
        (InvalidInput, changing nothing, for an unknown category or action)."""

    async def any_user(self) -> bool: ...
    async def list_users(self) -> list[User]:
        """Everyone, in name order (the server's administrator asks: `mnemo users list`)."""

    async def create_agent(
        self,
        user_id: str,
        name: str,
        *,
        private: bool = False,
        reads_default: bool = False,
        persona: str | None = None,
        upstream_model: str | None = None,
    ) -> Agent: ...
    async def get_agent(self, user_id: str, agent_id: str) -> Agent: ...
    async def update_agent(self, user_id: str, agent_id: str, **fields: object) -> Agent: ...
    async def list_agents(self, user_id: str) -> list[Agent]: ...

    async def add_api_key(self, key: ApiKey) -> ApiKey: ...
    async def key_holder(self, key_id: str) -> tuple[ApiKey, User | None] | None:
        """The key of that id and the user it belongs to, read together (None: no such key)."""

    async def list_api_keys(self, user_id: str) -> list[ApiKey]: ...
    async def revoke_api_key(self, user_id: str, key_id: str) -> ApiKey: ...
    async def touch_api_key(self, user_id: str, key_id: str, hour: datetime) -> None:
        """The key worked within `hour`: its last use moves there, if it was before."""

    async def get_setting(self, key: str) -> str | None: ...
    async def set_setting(self, key: str, value: str | None) -> None: ...
    async def first_setting(self, key: str, value: str) -> str:
        """The setting's value, set to `value` first if it has none (insert if absent, then
        read, in one transaction: the first of several writers wins)."""


class ConversationStore(Protocol):
    """What was said, kept for provenance."""

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
        """Store messages (and, in the same transaction, the gate's notices of what it masked
        in them, in the user's log, and `rewrites`: (id, content) of the conversation's earlier
        messages, masked where they hold a value the gate found now)."""

    async def conversation_messages(self, user_id: str, conversation_id: str) -> list[Message]:
        """The user's messages of that conversation, oldest first; none for another user's."""

    async def set_remember(
        self, user_id: str, conversation_id: str, agent_id: str | None, on: bool, at: datetime
    ) -> None:
        """The person's switch for the conversation (created, with `agent_id`, if not stored yet):
        off, enqueue_turn stores nothing of its turns (NotRemembered) and backfill skips it."""

    async def conversation_summaries(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        agent: str | object | None = UNSET,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[ConversationSummary]:
        """The user's conversations, newest first: those of `ids` when given, of `agent` (None:
        the default assistant's), begun in [since, until), each with its messages' count, last
        message's time and opening."""


class FactStore(Protocol):
    """Facts by id, hash and status, and the one way to change them (`commit`)."""

    async def get_fact(self, scope: Scope, fact_id: str) -> Fact:
        """Raises NotFound when the id is unknown or not visible to the scope."""

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
        """Newest first; only facts in `statuses` (all when None), of `category`, pinned or not
        as `pinned` says (either when None)."""

    async def count_facts(
        self,
        scope: Scope,
        *,
        statuses: Sequence[Status] | None = None,
        category: Category | None = None,
        pinned: bool | None = None,
    ) -> int:
        """How many facts `list_facts` pages through with the same filters."""

    async def find_by_hash(
        self, scope: Scope, text_hash: str, *, statuses: Sequence[Status] = (Status.ACTIVE,)
    ) -> list[Fact]:
        """Facts in these statuses (active ones by default) whose normalised text hashes to
        `text_hash`, oldest first."""

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
        """Apply the changes and their events in one transaction.

        An update whose stored version differs from `change.before.version`
        raises Conflict and nothing of the batch is applied. With `finish`, the
        claimed job is marked done with its result in the same transaction
        (Conflict if the claim was lost), so a turn is learnt from exactly once.
        With `mark`, the turn is marked as learnt by backfill in the same
        transaction (Conflict if its mark changed since `mark.replaces` was read).

        Every fact the batch creates or makes active (or a candidate) must belong to a live
        agent (NotFound otherwise). With `retire`, that agent of the user is deleted in the same
        transaction, once the batch leaves it no active fact and no candidate (Conflict if one
        is left: it came meanwhile); its facts stay. Duplicate when two facts of one agent
        would say the same with the same status (active, or a candidate).
        With `erase`, its messages, conversations and erased texts go in the same transaction,
        and its receipt, sealed with the chain's head after the batch, is kept. With
        `learnt_from`, Conflict if what the batch was learnt from was erased meanwhile.
        `notices`: what the sensitive-data gate refused, appended to the log after the batch.
        """


@dataclass(frozen=True)
class Ask:
    """One arm's search, as `SearchStore.arms` takes it: the SearchStore method it names
    (nearest, lexical, recent, during, pinned) and that method's arguments after the scope."""

    method: Literal["nearest", "lexical", "recent", "during", "pinned"]
    args: tuple[Any, ...] = ()


class SearchStore(Protocol):
    """The recall arms: the scope's active facts by meaning, words, recency, time and pin."""

    async def arms(
        self, scope: Scope, asks: Mapping[str, Ask], timed: Callable[[str, float], None]
    ) -> dict[str, list[Any]]:
        """Each ask's answer by its arm's name, as the method it names answers alone, read
        together: one trip to SQLite's thread for all, one pooled connection each on PostgreSQL
        (at once). `timed(arm, seconds)` hears how long each took."""

    async def nearest(self, scope: Scope, vector: np.ndarray, model: str, k: int) -> list[ScoredFact]:
        """Active facts by cosine similarity (highest first)."""

    async def lexical(self, scope: Scope, query: str, k: int) -> list[ScoredFact]:
        """Active facts by full-text relevance (best first)."""

    async def recent(self, scope: Scope, since: datetime, k: int) -> list[Fact]:
        """Active facts last confirmed at or after `since`, newest first."""

    async def during(self, scope: Scope, start: datetime, end: datetime, k: int) -> list[Fact]:
        """Active facts that became true (valid_from) or were said (created_at) at or after
        `start` and before `end`, those said last first."""

    async def pinned(self, scope: Scope) -> list[Fact]: ...
    async def fact_ids_starting(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        """The ids of the scope's facts that start with `prefix`, in order, at most `limit` (the
        command line's short ids)."""

    async def owned_ids_starting(self, kind: str, user_id: str, prefix: str, limit: int) -> list[str]:
        """The same for the person's turns (`kind` "turn") or receipts ("receipt")."""

    async def learnt_in(self, scope: Scope, conversation_id: str, since: datetime, limit: int) -> list[Fact]:
        """The scope's facts whose source is that conversation, made at or after `since` (any
        status), oldest first."""

    async def unheard(self, scope: Scope, before: Mapping[Category, datetime], limit: int) -> list[Fact]:
        """Active facts with no end, of the categories in `before`, neither said (nor kept) nor
        recalled since their category's time there: the longest unheard first."""

    async def vectors(self, scope: Scope, fact_ids: Sequence[str], model: str) -> dict[str, np.ndarray]: ...


class AuditLog(Protocol):
    """Each user's hash-chained events (see mnemo.audit)."""

    async def events(
        self, user_id: str, *, fact_id: str | None = None, until: datetime | None = None
    ) -> list[Event]: ...

    async def chain_head(self, user_id: str) -> str:
        """The hash of the user's last event (audit.GENESIS when there is none)."""


class ErasureStore(Protocol):
    """What an erasure reads first (the writing is `commit(erase=…)`), the keyed hashes of
    erased texts, and the receipts (see domain.Erasure)."""

    async def messages_saying(self, user_id: str, texts: Sequence[str]) -> list[tuple[str, str, str]]:
        """(conversation id, message id, content) of the user's messages, not erased yet, whose
        normalised text holds one of the normalised `texts`, oldest first."""

    async def messages_named(self, user_id: str, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(conversation id, message id, content) of those of the user's messages."""

    async def message_places(
        self, user_id: str, ids: Sequence[str]
    ) -> dict[str, tuple[str, datetime, datetime | None]]:
        """Where each of those of the user's messages is: its role, when it was said, and when
        its text was erased (None: not erased), by id."""

    async def conversation_message_ids(self, user_id: str, conversation_id: str) -> list[str] | None:
        """The ids of the conversation's messages; None when the user has no such conversation."""

    async def conversation_ids(self, user_id: str) -> list[str]:
        """The ids of all the user's conversations, oldest first."""

    async def erased(self, user_id: str, hashes: Sequence[str]) -> set[str]:
        """Those of the keyed `hashes` that are of texts the user erased."""

    async def unforget(self, user_id: str, hashes: Sequence[str]) -> None:
        """The person wrote these texts again themselves: they may be learnt again."""

    async def lingering(self) -> str | None:
        """Why an erased text may still be in the store's files (SQLite: its write-ahead log,
        while another process reads), as long as it may; None once it is not."""

    async def receipts(self, user_id: str, *, limit: int = 50, offset: int = 0) -> list[Receipt]:
        """The user's receipts, newest first."""

    async def receipt(self, user_id: str, receipt_id: str) -> Receipt:
        """NotFound for an unknown id or another user's."""


class RecallLog(Protocol):
    """Which assistant was given which fact, when (see store/sql/recalls.py); rows at or before
    `keep_after` are past keeping: never answered, and deleted by the next recording."""

    async def record_recalls(
        self, user_id: str, found: Sequence[tuple[str, RecallRecord]], keep_after: datetime
    ) -> int:
        """Rows of one or more recalls, each with its recall's id, in one transaction that also
        deletes the user's rows past keeping; nothing is written while the person's switch is
        off, nor for a fact erased or gone. How many rows were written."""

    async def recall_summary(
        self, user_id: str, fact_id: str, since: datetime, keep_after: datetime
    ) -> RecallSummary:
        """The fact's last recall kept, and how many since `since`."""

    async def recall_log(
        self,
        user_id: str,
        keep_after: datetime,
        *,
        after: tuple[datetime, str, str] | None = None,
        limit: int = 500,
    ) -> list[tuple[str, RecallRecord]]:
        """The user's rows kept, oldest first, each with its recall's id; a page after the
        (at, recall id, fact id) of the last one of the page before."""


class JobQueue(Protocol):
    """The durable queue of turns to learn from (see mnemo.batch.jobs)."""

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
        with the gate's notices of what it masked in them (and `rewrites` of the conversation's
        earlier messages, as `save_messages` takes them). QueueFull, storing nothing, when the
        person already has `max_queued` turns waiting (0: no limit); ErasedMeanwhile, storing
        nothing, when the person erased the conversation or everything at or after
        `erased_since`."""

    async def queued_turns(self, user_id: str) -> int:
        """How many of the person's turns wait to be learnt from (queued, in hand, over budget)."""

    async def user_job_counts(self, user_id: str) -> dict[str, int]:
        """How many of the person's turns are in each state (states without any left out)."""

    async def claim_job(self, worker: str, now: datetime, lease: timedelta) -> Job | None: ...
    async def release_job(self, claim: Claim) -> None: ...
    async def fail_job(
        self, claim: Claim, reason: FailReason, error: str, retry_at: datetime | None
    ) -> Job: ...
    async def requeue_waiting(self, now: datetime) -> int:
        """Queue again, due `now`, every job learnt without a chat model (status waiting), of
        every user; how many."""

    async def defer_job(self, claim: Claim, until: datetime) -> Job:
        """The claimed job waits over budget until `until`, not counted as an attempt;
        Conflict when the claim is no longer held."""

    async def retry_job(self, user_id: str, job_id: str) -> Job:
        """Queue the user's failed job again, due now, its attempts reset (see sql.jobs)."""

    async def get_job(self, user_id: str, job_id: str) -> Job: ...
    async def list_jobs(
        self,
        user_id: str,
        *,
        status: JobStatus | None = None,
        limit: int = 50,
        offset: int = 0,
        conversation_id: str | None = None,
    ) -> list[Job]:
        """The user's jobs, newest first (only those in `status`, of `conversation_id`, when given)."""

    async def job_messages(self, job: Job) -> list[Message]: ...
    async def job_counts(self) -> dict[str, int]:
        """How many jobs are in each state, everyone's together (states without jobs left out)."""

    async def beat(self, worker: str, at: datetime, forget_before: datetime) -> None:
        """Record that `worker` is alive at `at`; forget the workers silent since `forget_before`."""

    async def forget_worker(self, worker: str) -> None:
        """A worker stopping: its heartbeat goes."""

    async def heartbeats(self, since: datetime) -> list[datetime]:
        """The last heartbeat of every worker heard from since `since`, newest first."""


class UsageStore(Protocol):
    """The chat model's tokens spent on learning, per user per UTC day, and each user's own
    daily budget (see store/sql/usage.py)."""

    async def add_usage(self, user_id: str, day: date, spent: TokenUsage) -> None: ...
    async def usage_days(self, user_id: str, since: date) -> list[DayUsage]:
        """The user's days from `since` on that have any usage, newest first."""

    async def token_budget(self, user_id: str) -> int | None:
        """The user's own daily budget; None: the server's default applies."""

    async def set_token_budget(self, user_id: str, tokens: int | None) -> None:
        """Set (None: clear) the user's own budget; their turns over budget are due again now."""


class BackfillStore(Protocol):
    """Learning from stored conversations (see mnemo.batch.backfill)."""

    async def users_with_conversations(self) -> list[User]:
        """Every user with a stored conversation, by name (the one question across users)."""

    async def conversations_since(self, user_id: str, since: datetime | None) -> list[ConversationRef]:
        """The user's conversations with a message said at or after `since` (None: any),
        oldest first by their first such message."""

    async def unlearnt_before(self, user_id: str, since: datetime) -> tuple[int, int, datetime | None]:
        """What a window starting at `since` leaves out: the user messages said before it that
        no backfill learnt from (as `timed_messages` would read them), as (conversations,
        messages, when the oldest was said)."""

    async def timed_messages(
        self, user_id: str, conversation_ids: Sequence[str]
    ) -> dict[str, list[tuple[Message, datetime]]]:
        """These conversations' messages with when each was said, oldest first; messages of
        automation turns left out (they are never learnt from)."""

    async def backfill_marks(self, user_id: str, conversation_ids: Sequence[str]) -> list[BackfillMark]:
        """The turns of these conversations that backfill has learnt from."""


class TransferStore(Protocol):
    """Import and export, verbatim (see mnemo.batch.transfer)."""

    async def list_conversations(
        self, user_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> list[Conversation]:
        """The user's conversations with their messages (each with its time), ordered by
        (created_at, id); `after` is the (created_at, id) of the last one of the page before."""

    async def import_conversation(
        self,
        conversation: Conversation,
        notices: Sequence[GateNotice] = (),
        rewrites: Sequence[tuple[str, str]] = (),
    ) -> int:
        """Write a conversation (and the gate's notices of what it masked in it, and `rewrites`
        of the messages it already holds, as `save_messages` takes them), its
        messages with their ids and times, and its backfill marks, in one transaction; what is
        already there is kept. Returns how many messages were new. Conflict when an id belongs
        to another user."""

    async def import_user(self, user: User) -> User:
        """Create the user with the given id, name and switches; Conflict if either is taken."""

    async def import_agent(self, agent: Agent) -> bool:
        """Create the agent with the given id (False: it is there already); Conflict when the
        id is another user's or the name is the user's for another agent."""

    async def import_facts(
        self, user_id: str, facts: Sequence[tuple[Fact, np.ndarray | None]], events: Sequence[Event]
    ) -> None:
        """Insert facts (with their vectors) and events as they were, in one transaction: the
        events keep their time, digest and hashes, in the order given, and must continue the
        user's chain (Conflict otherwise); a fact already there is a Conflict."""


class ReindexStore(Protocol):
    """Vectors of other embedding models (see mnemo.batch.reindex)."""

    async def users_with_facts(self) -> list[User]:
        """Everyone with a fact, in name order."""

    async def unembedded(self, user_id: str, model: str, after: int, limit: int) -> list[Unembedded]:
        """Up to `limit` of the user's facts (not purged) without a `model` vector, rowid > `after`,
        in rowid order."""

    async def add_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[Unembedded, np.ndarray]]
    ) -> int:
        """Give each fact its `model` vector, beside its others, in one transaction; a fact changed
        since it was read (another version, purged) or that has one already is left alone.
        Returns how many were written."""

    async def vector_models(self, user_id: str) -> dict[str, int]:
        """How many vectors the user has, per model."""

    async def drop_vectors(self, user_id: str, keep: str) -> int:
        """Remove the user's vectors of every model but `keep`; returns how many went."""


class Store(
    AccountStore,
    ConversationStore,
    FactStore,
    SearchStore,
    AuditLog,
    ErasureStore,
    RecallLog,
    JobQueue,
    UsageStore,
    BackfillStore,
    TransferStore,
    ReindexStore,
    Protocol,
):
    """Every role: what the wiring (mnemo.build) opens and hands out, one role to each consumer."""

    newest_schema: int  # the version of this backend's last migration: a database past it is newer

    async def open(self) -> None:
        """Connect and bring the schema up to date (migrations)."""

    async def schema_versions(self) -> list[int]:
        """The versions of the migrations applied, in order."""
        ...

    async def close(self) -> None: ...
