"""Memory: a person's facts, from the turns they are learnt from to their erasure.

Every face (the API, the chat proxy, the web page, MCP, the CLI) changes and
reads facts through it; account administration (people, agents, API keys,
switches) is Accounts' (accounts.py), which Memory consults for whether memory
is on. The batch services that work on the store itself (mnemo.batch: the job
worker, backfill, reindex, the import of an export) are handed the store and the
writer by mnemo.build, the one module that wires them."""

from __future__ import annotations

import asyncio
import builtins  # Memory.list hides the builtin in the class body that follows it
import contextlib
import dataclasses
import itertools
import logging
import random
import re
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from datetime import datetime, timedelta
from types import EllipsisType
from typing import TypeVar

import numpy as np

from . import audit, receipts
from .accounts import Accounts
from .domain import (
    UNSET,
    Action,
    Agent,
    AuditReport,
    BackfillMark,
    Blocked,
    Category,
    Change,
    Conflict,
    Conversation,
    ConversationSummary,
    ConversationView,
    Event,
    Fact,
    GateAction,
    GatePolicy,
    InvalidInput,
    Job,
    JobStatus,
    Message,
    NotFound,
    RecallRecord,
    RecallSummary,
    RecallVia,
    Receipt,
    Scope,
    Source,
    SourceKind,
    Status,
    StoredTurn,
    Turn,
    TurnState,
    VersionConflict,
    clean_text,
    gate_notices,
    new_id,
    normalise,
    parse_time,
    text_hash,
    utcnow,
)
from .domain import (
    conversation_id as conversation_id_of,
)
from .erasure import Eraser, Plan
from .forgetting import Forgotten
from .observe import QUIET, Observer
from .providers.base import ChatModel, Embedder
from .recall.fuse import Hit
from .recall.log_writer import RecallLogWriter
from .recall.recaller import ARMS, Recaller
from .recall.second import Second
from .sensitive import FactGate, blocked_message, check_name, echoed, gate_fact, screened_messages
from .settings import Settings
from .store.base import Store
from .write import changes
from .write.writer import Writer, WriteReport, new_writer

T = TypeVar("T")
log = logging.getLogger(__name__)
RECEIPTS_READ = 1000  # an erased memory's receipt is looked for among the person's latest this many
WEEK = timedelta(days=7)  # a fact's recalls are counted over the last week


class Memory:
    """Built from injected parts; `mnemo.build.Core` wires it from Settings, with the Accounts
    and the Writer it shares with the batch services (made here when not given)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        chat: ChatModel | None = None,
        *,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = utcnow,
        accounts: Accounts | None = None,
        writer: Writer | None = None,
        forgotten: Forgotten | None = None,
        observer: Observer = QUIET,
        second: Embedder | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chat = chat
        self.settings = settings or Settings()
        self.clock = clock
        self.accounts = accounts or Accounts(store, self.settings, clock)  # whether memory is on
        self.forgotten = forgotten or Forgotten(store, self.accounts)
        self.writer = writer or new_writer(store, embedder, chat, self.settings.write, clock, self.forgotten)
        self.eraser = Eraser(store, self.forgotten, self.accounts, clock)
        self.observer = observer  # timings of recall's arms (mnemo.observe)
        # a second embedder (MNEMO_EMBED_SECOND): its cosines of recall's candidates, read by the ranker
        self._second = Second(store, second) if second is not None else None
        self.recaller = Recaller(store, embedder, self.settings.recall, clock, observer, self._second)
        self._queued: list[Callable[[], None]] = []
        self._recall_log = RecallLogWriter(store, self._keep_after)

    async def open(self) -> Memory:
        await self.store.open()
        return self

    async def close(self) -> None:
        await self.write_recall_log()
        if self._second is not None:  # read by recall or not (with fusion, or without its model)
            await self._second.close()
        await self.store.close()
        for model in (self.chat, self.embedder):
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()

    # -- agents and jobs -----------------------------------------------------------

    async def delete_agent(self, user_id: str, agent_id: str, *, actor: str = "user") -> tuple[Agent, int]:
        """Delete an agent, retract (not erase) its active facts and reject its candidates (no
        assistant is left to recall them); returns how many facts went.

        The agent is deleted in the transaction that finds none of its facts left active: a
        fact added for it meanwhile is swept too, and none can be added after."""
        agent = await self.store.get_agent(user_id, agent_id)  # NotFound before anything changes
        scope = Scope(user_id, agent_id)
        reason = "its agent was deleted"
        gone = 0

        async def sweep() -> Agent:
            nonlocal gone
            now, skipped = self.clock(), 0
            # the agent may read the default agent's facts too: those are passed over, page by page
            statuses = [Status.ACTIVE, Status.CANDIDATE]
            while page := await self.store.list_facts(scope, statuses=statuses, limit=500, offset=skipped):
                own = [f for f in page if f.agent_id == agent_id]
                skipped += len(page) - len(own)
                batch = [
                    changes.retract(f, now=now, actor=actor, reason=reason)
                    if f.status == Status.ACTIVE
                    else changes.reject(f, now=now, actor=actor, reason=reason)
                    for f in own
                ]
                if batch:
                    await self._commit(scope, batch, now)
                gone += len(own)
            await self.store.commit(user_id, [], now, retire=agent_id)
            return agent

        return await _settled(sweep), gone

    async def jobs(
        self, user_id: str, *, status: JobStatus | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        return await self.store.list_jobs(user_id, status=status, limit=limit, offset=offset)

    async def job(self, user_id: str, job_id: str) -> Job:
        return await self.store.get_job(user_id, job_id)

    async def turns(
        self, user_id: str, *, state: TurnState | None = None, limit: int = 50, offset: int = 0
    ) -> list[StoredTurn]:
        """The person's stored turns, newest first: each one's state and what it learnt."""
        status = state.status if state is not None else None
        return [StoredTurn.of(j) for j in await self.jobs(user_id, status=status, limit=limit, offset=offset)]

    async def turn(self, user_id: str, turn_id: str) -> StoredTurn:
        """One of the person's stored turns (its id is its job's); NotFound for anyone else's."""
        try:
            return StoredTurn.of(await self.job(user_id, turn_id))
        except NotFound:
            raise NotFound(f"no turn {turn_id}") from None

    async def openings(self, user_id: str, turns: Sequence[StoredTurn]) -> dict[str, str]:
        """What the person said first in each of these turns, as stored (masked by the gate),
        by turn id; a turn whose messages of theirs were all erased has none."""
        ids = [m for t in turns for m in t.message_ids]
        if not ids:
            return {}
        places = await self.store.message_places(user_id, ids)
        texts = {mid: text for _, mid, text in await self.store.messages_named(user_id, ids)}
        said = {}
        for turn in turns:
            first = next(
                (m for m in turn.message_ids if places.get(m, ("",))[0] == "user" and texts.get(m)), None
            )
            if first is not None:
                said[turn.id] = texts[first]
        return said

    async def retry_turn(self, user_id: str, turn_id: str) -> StoredTurn:
        """Learn again from one of the person's failed turns: queued now, its attempts reset.
        NotFound for anyone else's; InvalidInput, changing nothing, for a turn not failed."""
        try:
            job = await self.store.retry_job(user_id, turn_id)
        except NotFound:
            raise NotFound(f"no turn {turn_id}") from None
        for wake in self._queued:
            wake()
        return StoredTurn.of(job)

    # -- the two jobs -----------------------------------------------------------

    async def remember(self, turn: Turn) -> WriteReport:
        """Learn from a finished turn now. Never raises on bad model output: see the report."""
        return await self.writer.remember(turn, await self.accounts.server_mode())

    async def submit(
        self, turn: Turn, *, memory_on: bool | None = None, gate: GatePolicy | None = None
    ) -> Job | None:
        """Store a finished turn and queue it for learning, in one transaction.

        Returns None (storing nothing) when memory is off for the user or the
        turn is automation; the worker checks the switch again when it runs. A job
        queued wakes the workers of this process (`on_queued`). `memory_on`: the
        switch as the turn's caller decided it when the turn began (None: ask now); `gate`:
        the person's sensitive-data gate, likewise (its messages are stored through it).
        QueueFull, storing nothing, when the person already has `jobs.max_queued_per_user`
        turns waiting to be learnt from.
        """
        if memory_on is None:
            memory_on = await self.accounts.memory_enabled(turn.scope.user_id)
        if turn.automation or not memory_on:
            return None
        scope = Scope(turn.scope.user_id, turn.scope.agent_id)
        gate = gate if gate is not None else await self.accounts.gate(scope.user_id)
        conversation_id = turn.conversation_id or new_id()
        check_name("the conversation id", conversation_id, gate)
        messages, notices, found = screened_messages(scope.user_id, turn.messages, gate, conversation_id)
        earlier = (
            echoed(await self.store.conversation_messages(scope.user_id, conversation_id), found)
            if found
            else []
        )
        job = await self.store.enqueue_turn(
            scope,
            conversation_id,
            messages,
            turn.at or self.clock(),
            job_id=turn.id,
            notices=notices,
            rewrites=earlier,
            max_queued=self.settings.jobs.max_queued_per_user,
            erased_since=turn.began,
        )
        for wake in self._queued:
            wake()
        return job

    async def queue_full(self, user_id: str) -> bool:
        """Whether a turn of the person's would be refused now (`submit` decides for sure)."""
        cap = self.settings.jobs.max_queued_per_user
        return bool(cap) and await self.store.queued_turns(user_id) >= cap

    def on_queued(self, wake: Callable[[], None]) -> None:
        """Call `wake` whenever `submit` queues a job: a worker of this process looks at once
        rather than at its next poll."""
        self._queued.append(wake)

    async def recall(
        self,
        query: str,
        scope: Scope,
        *,
        as_of: datetime | None = None,
        limit: int | None = None,
        arms: Sequence[str] = ARMS,
        memory_on: bool | None = None,
        via: RecallVia | None = None,
    ) -> builtins.list[Hit]:
        """Facts for the query; empty when memory is off for this user (`memory_on`: the switch
        as the caller decided it for this turn; None: ask now). `via`: an assistant recalls
        through that face, and what it is given goes into the recall log (None: a person looks,
        nothing is recorded)."""
        if memory_on is None:
            memory_on = await self.accounts.memory_enabled(scope.user_id)
        if not memory_on:
            return []
        hits = await self.recaller.recall(scope, query, as_of=as_of, limit=limit, arms=arms)
        if via is not None and hits:
            await self._record(scope, hits, via)
        return hits

    def _keep_after(self, now: datetime | None = None) -> datetime:
        """Recall log rows at or before this (by default, now) are past keeping."""
        return (now or self.clock()) - timedelta(days=self.settings.recall_log_days)

    async def _record(self, scope: Scope, hits: Sequence[Hit], via: RecallVia) -> None:
        """Log what the assistant was given (written after the reply, see recall/log_writer.py)."""
        now = self.clock()
        found = [RecallRecord(h.fact.id, scope.agent_id, now, via) for h in hits]
        await self._recall_log.add(scope.user_id, new_id(), found)

    async def write_recall_log(self, user_id: str | None = None) -> None:
        """Write the recall log's rows still waiting (recall/log_writer.py): the person's, or
        everyone's; whatever reads the log here does so first."""
        if user_id is None:
            await self._recall_log.close()
        else:
            await self._recall_log.flush(user_id)

    async def recalls(self, scope: Scope, fact_id: str) -> RecallSummary:
        """The fact's last recall by an assistant, and how many in the last week (NotFound
        outside the scope)."""
        await self.store.get_fact(scope, fact_id)
        await self.write_recall_log(scope.user_id)
        now = self.clock()
        return await self.store.recall_summary(scope.user_id, fact_id, now - WEEK, self._keep_after(now))

    async def recall_log(self, user_id: str) -> AsyncIterator[tuple[str, RecallRecord]]:
        """The user's recall log kept, oldest first, each row with its recall's id."""
        await self.write_recall_log(user_id)
        keep_after = self._keep_after(self.clock())
        after = None
        while page := await self.store.recall_log(user_id, keep_after, after=after):
            for row in page:
                yield row
            last_id, last = page[-1]
            after = (last.at, last_id, last.fact_id)

    async def search(
        self, query: str, scope: Scope, *, as_of: datetime | None = None, limit: int = 50
    ) -> list[Hit]:
        """The person's own search over their memories: the semantic and lexical arms only,
        no token budget, and not gated by the memory switch (it reads, it never injects)."""
        wide = max(limit, self.settings.recall.semantic_k, self.settings.recall.lexical_k)
        recall = self.settings.recall.model_copy(
            update={
                "max_tokens": sys.maxsize,
                "semantic_k": wide,
                "lexical_k": wide,
                "candidate_k": max(wide, self.settings.recall.candidate_k),
            }
        )
        recaller = Recaller(self.store, self.embedder, recall, self.clock, self.observer)
        return await recaller.recall(scope, query, as_of=as_of, limit=limit, arms=("semantic", "lexical"))

    # -- a person's own edits -----------------------------------------------------

    async def add(
        self,
        scope: Scope,
        text: str,
        *,
        category: Category = Category.OTHER,
        pinned: bool = False,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        confidence: float = 1.0,
        actor: str = "user",
        source: Source | None = None,
        held: bool = False,
        reason: str | None = None,
        created_at: datetime | None = None,
    ) -> Fact:
        """A fact written by a person; restating an active fact reinforces it instead
        (and pins it, if asked; its category and start stay as they were, and it takes the
        end given now, or none if its own end has passed: it is true again). `held`
        stores a new fact as a candidate that the person approves or rejects (restating a
        waiting candidate reinforces it). The same text added many times at once makes one
        fact, reinforced by the others. `reason`: what its creation records (why it is held);
        `created_at`: when it was first kept, if before now (an import from another tool).
        `valid_to`: when it stops being true (past it, recall no longer takes it as true now).
        The person's sensitive-data gate may mask the text, hold it, or refuse it."""
        _check_end(valid_from, valid_to)
        gated = await self._gated(scope.user_id, clean_text(text))
        text = gated.text
        held = held or bool(gated.held)
        reason = "; ".join(r for r in (reason, gated.reason) if r) or None
        status = Status.CANDIDATE if held else Status.ACTIVE
        vector = None
        if await self.forgotten.dropped(scope.user_id, [text]):
            if actor != "user":
                raise InvalidInput(
                    "the person erased this text; it is not written again unless they write it themselves"
                )
            # the person writes it again themselves: it may be learnt again
            await self.store.unforget(scope.user_id, await self.forgotten.every_digest(scope.user_id, [text]))

        async def attempt() -> Fact:
            nonlocal vector
            now = self.clock()
            same = await self.store.find_by_hash(scope, text_hash(text), statuses=(status,))
            if same:
                reinforced = changes.reinforce(same[0], now=now, actor=actor)
                batch = [reinforced]
                end = changes.restated_end(reinforced.fact, valid_to, now)
                if end != reinforced.fact.valid_to:  # said again: the end this saying gives holds
                    _check_end(reinforced.fact.valid_from, end)
                    batch.append(changes.end(batch[-1].fact, end, now=now, actor=actor))
                if pinned and not same[0].pinned:
                    batch.append(changes.pin(batch[-1].fact, True, actor=actor))
                await self._commit(scope, batch, now)
                return batch[-1].fact
            if vector is None:
                vector = (await self.embedder.embed([text]))[0]
            fact = changes.new_fact(
                scope,
                text,
                now=now,
                source=source or Source(SourceKind.API),
                category=category,
                confidence=confidence,
                valid_from=valid_from,
                valid_to=valid_to,
                embedding_model=self.embedder.model_name,
                pinned=pinned,
                status=status,
                created_at=created_at,
            )
            await self._commit(scope, [changes.create(fact, vector, actor, reason)], now)
            return fact

        return await _settled(attempt)

    async def _gated(self, user_id: str, text: str) -> FactGate:
        """A memory's text through the person's sensitive-data gate: InvalidInput, naming the
        category only, when the policy blocks what it holds (the refusal is in their log)."""
        gated = gate_fact(text, await self.accounts.gate(user_id))
        if gated.blocked:
            refused = gate_notices("memory", [(k, GateAction.BLOCK) for k in gated.blocked])
            await self.store.commit(user_id, [], self.clock(), notices=refused)
            raise Blocked(blocked_message(gated.blocked))
        return gated

    async def get(self, scope: Scope, fact_id: str) -> Fact:
        return await self.store.get_fact(scope, fact_id)

    async def edit(
        self,
        scope: Scope,
        fact_id: str,
        text: str,
        *,
        version: int | None = None,
        category: Category | None = None,
        actor: str = "user",
        reason: str | None = None,
    ) -> Fact:
        """Correct a fact in place: same id and created date; the old text stays in history."""
        return await self.update(
            scope, fact_id, version=version, text=text, category=category, actor=actor, reason=reason
        )

    async def update(
        self,
        scope: Scope,
        fact_id: str,
        *,
        version: int | None = None,
        text: str | None = None,
        category: Category | None = None,
        pinned: bool | None = None,
        valid_to: datetime | EllipsisType | None = ...,
        actor: str = "user",
        reason: str | None = None,
    ) -> Fact:
        """A person's change to text, category, pin and end (`valid_to`: a time, or None to
        clear it; `...` leaves it), in one transaction: same id and created date; Conflict if
        `version` is given and is not the one stored. Nothing new: no event."""
        fact = await self._current(scope, fact_id, version)
        now = self.clock()
        batch: list[Change] = []
        if not isinstance(valid_to, EllipsisType) and valid_to != fact.valid_to:
            _check_end(fact.valid_from, valid_to)
            batch.append(changes.end(fact, valid_to, now=now, actor=actor, reason=reason))
            fact = batch[-1].fact
        new_text = fact.text
        if text is not None:  # what the person writes themselves is theirs to review: no hold
            gated = await self._gated(scope.user_id, clean_text(text))
            new_text, reason = gated.text, "; ".join(filter(None, [reason, gated.note])) or None
        if new_text != fact.text or (category is not None and category != fact.category):
            text_changed = new_text != fact.text
            vector = (await self.embedder.embed([new_text]))[0] if text_changed else None
            edited = changes.edit(
                fact,
                new_text,
                now=now,
                vector=vector,
                embedding_model=self.embedder.model_name if text_changed else fact.embedding_model,
                actor=actor,
                reason=reason,
                category=category,
                confidence=1.0,
            )
            if vector is not None and fact.supersedes and not await self._still_related(fact, vector):
                # the candidate was proposed to replace that fact for what it first said; edited
                # into something else, approving it must not retire an unrelated fact
                why = f"no longer replaces memory {fact.supersedes}: the edit is about something else"
                unlinked = edited.fact.evolve(supersedes=None)
                edited = dataclasses.replace(
                    edited, fact=unlinked, reason="; ".join(filter(None, [reason, why]))
                )
            batch.append(edited)
        if pinned is not None and pinned != fact.pinned:
            batch.append(changes.pin(batch[-1].fact if batch else fact, pinned, actor=actor))
        if not batch:
            return fact
        await self._commit(scope, batch, now)
        return batch[-1].fact

    async def retract(
        self,
        scope: Scope,
        fact_id: str,
        *,
        reason: str | None = None,
        actor: str = "user",
        version: int | None = None,
    ) -> Fact:
        fact = await self._current(scope, fact_id, version)
        now = self.clock()
        return await self._apply(scope, changes.retract(fact, now=now, actor=actor, reason=reason), now)

    async def restore(self, scope: Scope, fact_id: str, *, actor: str = "user") -> Fact:
        """Make a retracted, superseded or rejected fact active again. Conflict (Duplicate)
        when an active fact of its agent says the same; InvalidInput when its agent is gone."""
        fact = await self._current(scope, fact_id, None)
        await self._agent_alive(fact)
        now = self.clock()
        return await self._apply(scope, changes.restore(fact, now=now, actor=actor), now)

    async def undo(self, scope: Scope, fact_id: str, version: int, *, actor: str = "user") -> Fact:
        """Take back the fact's last change, if it is still the last (the fact is at `version`)
        and one that has an opposite: a retraction (restored), an edit of its text or category,
        a change of its end (each set back as it was), or an approval (the fact waits for review
        again, and a fact it replaced is restored). Another change, since or instead, changes
        nothing: Conflict when the fact moved on, InvalidInput for a change that cannot be taken
        back this way."""
        fact = await self._current(scope, fact_id, version)
        events = await self.store.events(scope.user_id, fact_id=fact_id)
        last = events[-1]
        # one change of text and end together is two events of one time and actor: both go back
        together = list(
            itertools.takewhile(
                lambda e: (
                    (e.at, e.actor, e.action, e.reason == UNDONE)
                    == (last.at, last.actor, last.action, last.reason == UNDONE)
                ),
                reversed(events),
            )
        )
        before = together[-1].before or {}
        was_end = parse_time(before.get("valid_to"))
        if last.action == Action.APPROVE and fact.status == Status.ACTIVE:
            return await self._unapprove(scope, fact, parse_time(before.get("recorded_at")), actor)
        if last.action == Action.RETRACT and fact.status == Status.RETRACTED:
            await self._agent_alive(fact)
            now = self.clock()
            back = [changes.restore(fact, now=now, actor=actor, reason=UNDONE)]
            if was_end is not None:  # a retraction took nothing but the belief: its end stays
                back.append(changes.end(back[-1].fact, was_end, now=now, actor=actor, reason=UNDONE))
            await self._commit(scope, back, now)
            return back[-1].fact
        if last.action != Action.EDIT or not before or fact.purged or last.reason == UNDONE:
            raise InvalidInput(f"the last change of memory {fact_id} ({last.action}) is not one to undo")
        return await self.update(
            scope,
            fact_id,
            version=version,
            text=before["text"] if before.get("text") != fact.text else None,
            category=Category(before["category"]) if before.get("category") != str(fact.category) else None,
            valid_to=was_end if was_end != fact.valid_to else ...,
            actor=actor,
            reason=UNDONE,
        )

    async def _unapprove(self, scope: Scope, fact: Fact, recorded_at: datetime | None, actor: str) -> Fact:
        """The approval of `fact` taken back; a fact it replaced on approval is active again,
        with the end it had before it was replaced."""
        await self._agent_alive(fact)
        now = self.clock()
        back = [changes.unapprove(fact, recorded_at, actor=actor, reason=UNDONE)]
        if fact.supersedes:
            with contextlib.suppress(NotFound):
                old = await self.store.get_fact(scope, fact.supersedes)
                if old.status == Status.SUPERSEDED and old.superseded_by == fact.id:
                    replaced = (await self.store.events(scope.user_id, fact_id=old.id))[-1]
                    back.append(changes.restore(old, now=now, actor=actor, reason=UNDONE))
                    if (was_end := parse_time((replaced.before or {}).get("valid_to"))) is not None:
                        back.append(changes.end(back[-1].fact, was_end, now=now, actor=actor, reason=UNDONE))
        await self._commit(scope, back, now)
        return back[0].fact

    # -- the "Still true?" list ----------------------------------------------------

    async def stale(self, scope: Scope, *, limit: int = 50) -> builtins.list[Fact]:
        """Active facts with no end that have gone neither said again nor recalled for their
        category's time (settings.stale), the longest unheard first; none while the person's
        switch is off. An offer only: nothing here changes; `keep`, an end or an erasure does."""
        user = await self.store.get_user(scope.user_id)
        if user is None or not user.review_stale:
            return []
        await self.write_recall_log(scope.user_id)  # when each was last recalled
        return await self.store.unheard(scope, self.settings.stale.before(self.clock()), limit)

    async def keep(self, scope: Scope, fact_id: str, *, actor: str = "user") -> Fact:
        """The person says an active fact is still true: its clock starts again (a reinforcement
        that counts no new mention), so it leaves the "Still true?" list for its category's time.
        Kept, or said, within the last day: as it is (a second click, or two at once, is one keep)."""

        async def attempt() -> Fact:
            fact = await self._current(scope, fact_id, None)
            now = self.clock()
            if fact.status != Status.ACTIVE:
                raise InvalidInput(f"memory {fact_id} is {fact.status}: only an active memory is kept")
            if fact.ended(now):
                raise InvalidInput(f"memory {fact_id} has ended: clear or move its end to bring it back")
            if fact.last_seen_at is not None and now - fact.last_seen_at < KEPT_WITHIN:
                return fact
            change = changes.reinforce(fact, now=now, actor=actor, reason="still true", mentions=0)
            return await self._apply(scope, change, now)

        return await _settled(attempt)

    async def pin(self, scope: Scope, fact_id: str, pinned: bool = True, *, actor: str = "user") -> Fact:
        """Pin or unpin; a fact already so is left as it is (no new version, no event)."""
        fact = await self._current(scope, fact_id, None)
        if fact.pinned == pinned:
            return fact
        return await self._apply(scope, changes.pin(fact, pinned, actor=actor), self.clock())

    async def approve(self, scope: Scope, fact_id: str, *, actor: str = "user") -> Fact:
        """Accept a candidate; if it was proposed as a replacement, the old fact is superseded.

        When an active fact of the candidate's agent already says the same, that fact is
        reinforced (and takes over the replacement) and the candidate is closed as superseded
        by it: the answer is then that fact."""

        async def attempt() -> Fact:
            fact = await self._current(scope, fact_id, None)
            await self._agent_alive(fact)
            now = self.clock()
            same = [
                f
                for f in await self.store.find_by_hash(scope, fact.text_hash)
                if f.agent_id == fact.agent_id and f.id != fact.id
            ]
            if same:
                kept = changes.reinforce(same[0], now=now, actor=actor, mentions=fact.mentions)
                batch = [changes.merge(fact, same[0], now=now, actor=actor), kept]
            else:
                batch = [changes.approve(fact, now=now, actor=actor)]
            active = batch[-1].fact
            if fact.supersedes and fact.supersedes != active.id:
                try:
                    old = await self.store.get_fact(scope, fact.supersedes)
                except NotFound:  # no longer visible to this scope
                    old = None
                if old is not None and old.status == Status.ACTIVE:
                    batch.append(changes.supersede(old, active, now=now, actor=actor))
            await self._commit(scope, batch, now)
            return active

        return await _settled(attempt)

    async def reject(
        self, scope: Scope, fact_id: str, *, reason: str | None = None, actor: str = "user"
    ) -> Fact:
        fact = await self._current(scope, fact_id, None)
        now = self.clock()
        return await self._apply(scope, changes.reject(fact, now=now, actor=actor, reason=reason), now)

    async def purge(
        self,
        scope: Scope,
        fact_id: str,
        *,
        actor: str = "user",
        reason: str | None = None,
        version: int | None = None,
        message_ids: Sequence[str] = (),
        keep: Collection[str] = (),
        other_agents: bool = False,
    ) -> tuple[Fact, Receipt]:
        """Erase a fact's text everywhere (the right to erasure), with the messages it was learnt
        from and its agent's other facts that say the same (see mnemo.erasure); an event records
        that it happened, and the signed receipt says what went. Its text is never learnt again.
        `message_ids`: messages to erase too (those the plan offers), `keep`: those the plan takes
        that stay, `other_agents`: the same text in the person's other agents' memories goes too.
        A fact erased already is left as it is, with the receipt of the erasure that took it."""

        async def attempt() -> tuple[Fact, Receipt]:
            fact = await self._current(scope, fact_id, version)
            if fact.purged and (earlier := await self.erased_by(scope.user_id, fact.id)) is not None:
                return fact, earlier  # erased already (a form sent twice): that erasure's receipt
            plan = await self.eraser.plan_memory(fact, message_ids, keep=keep, other_agents=other_agents)
            receipt = await self.eraser.erase(scope.user_id, plan, actor=actor, reason=reason)
            return await self.store.get_fact(Scope(scope.user_id, all_agents=True), fact.id), receipt

        if version is not None:  # the caller named the version it saw: no second try
            return await attempt()
        return await _settled(attempt)

    async def import_conversation(self, conversation: Conversation) -> tuple[int, int]:
        """Store a conversation from a file, leaving out the messages the person erased (a file
        taken before the erasure names them by the same ids); how many messages were new, and
        how many were left out. A conversation all of whose messages were erased is left out."""
        ids = [m.id for m in conversation.messages if m.id and m.erased_at is None]
        erased = await self.forgotten.dropped_messages(conversation.user_id, ids) if ids else set()
        kept = tuple(m for m in conversation.messages if m.id not in erased)
        if erased and not kept:
            return 0, len(erased)
        gate = await self.accounts.gate(conversation.user_id)
        screened, notices, found = screened_messages(conversation.user_id, kept, gate, conversation.id)
        held = await self.store.conversation_messages(conversation.user_id, conversation.id) if found else []
        earlier = echoed(held, found)
        added = await self.store.import_conversation(
            dataclasses.replace(conversation, messages=tuple(screened)), notices, earlier
        )
        return added, len(erased)

    async def erasure_plan(
        self,
        scope: Scope,
        fact_id: str,
        message_ids: Sequence[str] = (),
        *,
        keep: Collection[str] = (),
        other_agents: bool = False,
    ) -> Plan:
        """What erasing the fact would take (for the person to see first; see `purge`)."""
        fact = await self.store.get_fact(scope, fact_id)
        return await self.eraser.plan_memory(fact, message_ids, keep=keep, other_agents=other_agents)

    async def erase_conversation(
        self, user_id: str, conversation_id: str, *, with_facts: bool = False, actor: str = "user"
    ) -> Receipt:
        """Remove a conversation, its messages, jobs and backfill marks (and, `with_facts`, the
        memories learnt from it), with a signed receipt."""

        async def attempt() -> Receipt:
            plan = await self.eraser.plan_conversation(user_id, conversation_id, with_facts)
            return await self.eraser.erase(user_id, plan, actor=actor)

        return await _settled(attempt)

    async def conversation_erasure_plan(self, user_id: str, conversation_id: str) -> Plan:
        """What erasing the conversation would take; the memories learnt from it, which the
        person may erase with it, are its `cited_by`."""
        return await self.eraser.plan_conversation(user_id, conversation_id, with_facts=False)

    async def about(
        self, user_id: str, query: str
    ) -> tuple[builtins.list[Fact], builtins.list[tuple[str, str, str]]]:
        """Everything about a subject, for the person to tick what goes: every memory and every
        message (conversation id, message id, text) that holds the query's words."""
        return await self.eraser.about(user_id, query)

    async def selection_plan(
        self,
        user_id: str,
        fact_ids: Sequence[str],
        message_ids: Sequence[str],
        *,
        keep: Collection[str] = (),
        other_agents: bool = False,
    ) -> Plan:
        """What erasing the ticked memories and messages would take (NotFound for an id the
        user has no memory or message by; `keep` and `other_agents` as `purge` takes them)."""
        everything = Scope(user_id, all_agents=True)
        chosen = [await self.store.get_fact(everything, fid) for fid in dict.fromkeys(fact_ids)]
        return await self.eraser.plan_selection(
            user_id, chosen, list(dict.fromkeys(message_ids)), keep=keep, other_agents=other_agents
        )

    async def erase_selection(
        self,
        user_id: str,
        fact_ids: Sequence[str],
        message_ids: Sequence[str],
        *,
        actor: str = "user",
        keep: Collection[str] = (),
        other_agents: bool = False,
    ) -> Receipt:
        """Erase the ticked memories (as purge does) and messages, with one signed receipt."""

        async def attempt() -> Receipt:
            plan = await self.selection_plan(
                user_id, fact_ids, message_ids, keep=keep, other_agents=other_agents
            )
            if not plan.facts and not plan.messages:
                raise InvalidInput("nothing to erase: tick at least one memory or message")
            return await self.eraser.erase(user_id, plan, actor=actor)

        return await _settled(attempt)

    async def everything_plan(self, user_id: str) -> Plan:
        """What erasing all of the person's data would take."""
        return await self.eraser.plan_everything(user_id)

    async def erase_everything(
        self, user_id: str, *, keep_key: str | None = None, actor: str = "user"
    ) -> Receipt:
        """Erase all of the person's data: every memory's text and where it came from, every
        conversation with its messages and queued turns, every vector, every agent (deleted, its
        name overwritten, its persona gone) and every API key but `keep_key` (the one in use,
        its label overwritten). The person and their audit log (every text in it erased)
        remain."""

        async def attempt() -> Receipt:
            plan = await self.eraser.plan_everything(user_id)
            return await self.eraser.erase(user_id, plan, actor=actor, keep_key=keep_key)

        return await _settled(attempt)

    async def receipts(self, user_id: str, *, limit: int = 50, offset: int = 0) -> builtins.list[Receipt]:
        return await self.store.receipts(user_id, limit=limit, offset=offset)

    async def receipt(self, user_id: str, receipt_id: str) -> Receipt:
        return await self.store.receipt(user_id, receipt_id)

    async def erased_by(self, user_id: str, fact_id: str) -> Receipt | None:
        """The receipt of the erasure that took the fact's text, among the person's newest
        RECEIPTS_READ (None: not among them, or not erased)."""
        found = await self.store.receipts(user_id, limit=RECEIPTS_READ, offset=0)
        return next((r for r in found if fact_id in r.body.get("erased", {}).get("facts", [])), None)

    async def lingering(self) -> str | None:
        """Why an erased text may still be in the database's files, while it may (see
        SQLiteStore.lingering): the faces add it to an erasure's answer."""
        return await self.store.lingering()

    async def receipt_key(self) -> str:
        """The public key that checks this server's receipts."""
        return await self.eraser.public_key()

    async def check_receipt(self, document: object, user_id: str | None = None) -> builtins.list[str]:
        """Why `document` (a receipt as handed out, parsed) is not one of this server's (of
        `user_id`'s, when given), about an erasure its user's audit log holds; empty when it is."""
        found = receipts.problems(document, await self.receipt_key())
        if found:
            return found
        assert isinstance(document, dict)
        body = document["body"]
        user, head = body.get("user"), body.get("chain_head")
        if user_id is not None and user != user_id:
            return ["it is a receipt of another user's erasure"]
        if not isinstance(user, str) or await self.store.get_user(user) is None:
            return ["it names a user this server does not have"]
        if head != audit.GENESIS and not any(e.hash == head for e in await self.store.events(user)):
            return ["the audit log of its user holds no event with its chain head"]
        return []

    # -- reading the record -----------------------------------------------------

    async def history(self, scope: Scope, fact_id: str) -> list[Event]:
        await self.store.get_fact(scope, fact_id)  # NotFound outside the scope
        return await self.store.events(scope.user_id, fact_id=fact_id)

    async def list(
        self,
        scope: Scope,
        *,
        as_of: datetime | None = None,
        statuses: Sequence[Status] | None = (Status.ACTIVE,),
        limit: int = 50,
        offset: int = 0,
        category: Category | None = None,
        pinned: bool | None = None,
    ) -> list[Fact]:
        """Facts of the scope, newest first (only those of `category`, pinned or not as `pinned`
        says, when given); with `as_of`, as they were believed then."""
        if as_of is None:
            return await self.store.list_facts(
                scope, statuses=statuses, limit=limit, offset=offset, category=category, pinned=pinned
            )
        visible = {f.id for f in await self.store.list_facts(scope, statuses=None, limit=1_000_000)}
        events = await self.store.events(scope.user_id, until=as_of)
        past = [
            f
            for f in audit.believed_at(scope.user_id, events, as_of).values()
            if f.id in visible
            and (not statuses or f.status in statuses)
            and (category is None or f.category == category)
            and (pinned is None or f.pinned == pinned)
        ]
        past.sort(key=lambda f: (f.created_at, f.id), reverse=True)
        return past[offset : offset + limit]

    async def count(
        self,
        scope: Scope,
        *,
        statuses: Sequence[Status] | None = (Status.ACTIVE,),
        category: Category | None = None,
        pinned: bool | None = None,
    ) -> int:
        """How many facts `list` pages through with the same filters (now, not `as_of`)."""
        return await self.store.count_facts(scope, statuses=statuses, category=category, pinned=pinned)

    async def messages(
        self, user_id: str, conversation_id: str, ids: Sequence[str] | None = None
    ) -> builtins.list[Message]:
        """A conversation's stored messages (only those of `ids`, when given), oldest first:
        where a fact came from. Another user's conversation has none."""
        found = await self.store.conversation_messages(user_id, conversation_id)
        if ids is None:
            return found
        wanted = set(ids)
        return [m for m in found if m.id in wanted]

    async def conversations(
        self, user_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> builtins.list[Conversation]:
        """The user's stored conversations with their messages, oldest first, a page at a time
        (`after`: the last one's created_at and id), each with the turns backfill learnt from."""
        page = await self.store.list_conversations(user_id, after=after, limit=limit)
        if not page:
            return []
        marks: defaultdict[str, builtins.list[BackfillMark]] = defaultdict(list)
        for mark in await self.store.backfill_marks(user_id, [c.id for c in page]):
            marks[mark.conversation_id].append(mark)
        return [dataclasses.replace(c, marks=tuple(marks[c.id])) for c in page]

    async def conversation_list(
        self,
        user_id: str,
        *,
        q: str | None = None,
        agent: str | object | None = UNSET,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[ConversationSummary]:
        """The person's conversations, newest first: with `q`, those with a message (not erased)
        that says its words (domain.says); of `agent` (None: the default assistant's); begun
        in [since, until)."""
        ids = None
        if q is not None:
            if not WORD.search(normalise(q)):  # no word to look for: reading every message would find none
                raise InvalidInput("q has no words to look for")
            ids = list(dict.fromkeys(c for c, _, _ in await self.store.messages_saying(user_id, [q])))
        return await self.store.conversation_summaries(
            user_id, ids=ids, agent=agent, since=since, until=until, limit=limit, offset=offset
        )

    async def remember_conversation(
        self, scope: Scope, conversation_id: str, on: bool
    ) -> ConversationSummary:
        """The person's switch for one conversation: off, its later turns are answered (with
        recall) but neither stored nor learnt from, and backfill leaves it alone; what it holds
        already stays until they erase it. A conversation not stored yet is created (the
        scope's agent's), so that its first turn already knows."""
        cid = conversation_id_of(conversation_id)
        check_name("the conversation id", cid, await self.accounts.gate(scope.user_id))
        await self.store.set_remember(scope.user_id, cid, scope.agent_id, on, self.clock())
        return (await self.store.conversation_summaries(scope.user_id, ids=[cid], limit=1))[0]

    async def remembers(self, user_id: str, conversation_id: str) -> bool:
        """Whether the person's turns of that conversation are stored (one not stored yet: yes)."""
        found = await self.store.conversation_summaries(user_id, ids=[conversation_id], limit=1)
        return not found or found[0].remember

    async def ids_starting(
        self, scope: Scope, prefix: str, limit: int = 2, kind: str = "memory"
    ) -> builtins.list[str]:
        """The ids of the scope's memories (or the person's turns or receipts, by `kind`) that
        start with `prefix`, in order (short ids)."""
        if kind == "memory":
            return await self.store.fact_ids_starting(scope, prefix, limit)
        return await self.store.owned_ids_starting(kind, scope.user_id, prefix, limit)

    async def conversation(self, user_id: str, conversation_id: str) -> ConversationView:
        """One of the person's conversations: its messages, its turns, and the memories learnt
        from it or touched by its turns (as they are now, erased ones without their text).
        NotFound for anyone else's."""
        found = await self.store.conversation_summaries(user_id, ids=[conversation_id], limit=1)
        if not found:
            raise NotFound(f"no conversation {conversation_id}")
        jobs = await self.store.list_jobs(user_id, conversation_id=conversation_id, limit=TURNS_SHOWN)
        turns = tuple(StoredTurn.of(j) for j in jobs)
        everything = Scope(user_id, all_agents=True)
        began = found[0].created_at  # a kept memory of an erased conversation of the same id: not this one's
        memories = await self.store.learnt_in(everything, conversation_id, began, TURNS_SHOWN)
        known = {f.id for f in memories}
        taught = dict.fromkeys(
            fid for t in turns for ids in t.facts.values() for fid in ids if fid not in known
        )
        for fact_id in list(taught)[: TURNS_SHOWN - len(memories)]:  # reinforced, replaced: learnt elsewhere
            with contextlib.suppress(NotFound):
                memories.append(await self.store.get_fact(everything, fact_id))
        messages = await self.store.conversation_messages(user_id, conversation_id)
        return ConversationView(found[0], tuple(messages), turns, tuple(memories))

    async def events(self, user_id: str) -> builtins.list[Event]:
        """The user's whole audit log, oldest first."""
        return await self.store.events(user_id)

    async def verify_audit(self, user_id: str) -> AuditReport:
        return audit.verify(await self.store.events(user_id))

    # -- plumbing ---------------------------------------------------------------

    async def _still_related(self, candidate: Fact, vector: np.ndarray) -> bool:
        """Whether the fact a candidate proposes to replace is still related to its new text (as
        near as the writer asks of a fact it weighs replacing)."""
        replaced = candidate.supersedes
        if not replaced:
            return False
        model = self.embedder.model_name
        stored = await self.store.vectors(Scope(candidate.user_id, all_agents=True), [replaced], model)
        old = stored.get(replaced)
        if old is None:
            return False
        similarity = float(np.dot(vector, old) / (np.linalg.norm(vector) * np.linalg.norm(old) or 1.0))
        return similarity >= self.settings.write.related_floor

    async def _agent_alive(self, fact: Fact) -> None:
        """A fact made active again must belong to an agent that is still there: a deleted
        agent's fact would be active with no assistant left to recall it."""
        if fact.agent_id is None:
            return
        try:
            await self.store.get_agent(fact.user_id, fact.agent_id)
        except NotFound:
            raise InvalidInput(
                f"memory {fact.id} belonged to an agent that was deleted, so no assistant would"
                " recall it; add its text again to keep it"
            ) from None

    async def _current(self, scope: Scope, fact_id: str, version: int | None) -> Fact:
        fact = await self.store.get_fact(scope, fact_id)
        if version is not None and version != fact.version:
            raise VersionConflict(f"memory {fact_id} is at version {fact.version}, not {version}")
        return fact

    async def _apply(self, scope: Scope, change: Change, now: datetime) -> Fact:
        await self._commit(scope, [change], now)
        return change.fact

    async def _commit(
        self, scope: Scope, batch: builtins.list[Change], now: datetime
    ) -> builtins.list[Event]:
        return await self.store.commit(scope.user_id, batch, now)


_ATTEMPTS = 100
WORD = re.compile(r"\w")
TURNS_SHOWN = 500  # a conversation's page shows this many of its turns, and of the memories they taught
UNDONE = "undone"  # the reason of a change that took another back (not itself undone)
KEPT_WITHIN = timedelta(days=1)  # a memory said or kept this recently is kept already


async def _settled(attempt: Callable[[], Awaitable[T]]) -> T:
    """`attempt()` again while it loses a race (Conflict: the fact moved on, or another write
    made the same fact first): each try reads afresh, and every round one writer wins."""
    for tries in range(1, _ATTEMPTS + 1):
        try:
            return await attempt()
        except Conflict:
            if tries == _ATTEMPTS:
                raise
            await asyncio.sleep(random.uniform(0, 0.002 * tries))
    raise AssertionError("unreachable")


__all__ = ["Hit", "Memory", "WriteReport"]


def _check_end(valid_from: datetime | None, valid_to: datetime | None) -> None:
    """An end must come after the start: InvalidInput, changing nothing, for one that does not."""
    if valid_to is not None and valid_from is not None and valid_to <= valid_from:
        raise InvalidInput("valid_to must be after valid_from: a memory ends after it begins")
