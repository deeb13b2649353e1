"""After every turn: gate, extract, find what each new fact touches, reconcile, rule, apply."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol, assert_never

import numpy as np

from ..domain import (
    Action,
    BackfillMark,
    Change,
    Claim,
    Conflict,
    Duplicate,
    Event,
    Fact,
    FailReason,
    GateAction,
    GatePolicy,
    InvalidInput,
    LearntFrom,
    MemoryMode,
    Message,
    NotFound,
    Scope,
    Sensitive,
    SkipReason,
    Status,
    TokenUsage,
    Turn,
    gate_notices,
    learnt_facts,
    new_id,
    text_hash,
    utc_day,
)
from ..forgetting import Forgotten
from ..gate import memory_enabled
from ..providers.base import ChatModel, Embedder, ModelError, ModelUnavailable, metered
from ..sensitive import FactGate, blocked_message, echoed, gate_fact, screen, screened_messages, tally
from ..settings import WriteSettings
from ..store.base import AccountStore, ConversationStore, FactStore, SearchStore, UsageStore
from . import changes
from .extract import ExplicitExtractor, Extractor, ModelExtractor, Proposal
from .policy import Ruled, held_reason, rule
from .reconcile import Op, reconcile

log = logging.getLogger(__name__)

_PLANS = 3  # a turn is planned again when a concurrent write made one of its facts first
AGENT_GONE = "its agent was deleted"
AUTOMATION = "automation turns never write memory"
_SKIP_REASONS = {AGENT_GONE: SkipReason.AGENT_DELETED, AUTOMATION: SkipReason.AUTOMATION}
ERASED = "you erased these words: never learnt again"


@dataclass
class WriteReport:
    """What one turn did to memory, and what went wrong on the way."""

    events: list[Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: str | None = None
    retry: bool = False  # the model was unavailable: the same turn may be tried again
    forgotten: int = 0  # proposals dropped: the person erased those words
    failure: FailReason | None = None  # why nothing was learnt: a job with one is not finished
    waiting_for_model: bool = False  # learnt without a chat model: only explicit requests
    facts: dict[str, list[str]] = field(default_factory=dict)  # applied, by kind (learnt_facts)
    usage: TokenUsage = field(default_factory=TokenUsage)  # the chat model's tokens, every try
    sensitive: list[tuple[Sensitive, GateAction]] = field(default_factory=list)  # the gate's actions
    # what the model proposed that was not kept, by why (words that quote none of it): the turn
    # shows them
    dropped: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        """What a finished job records: why it was skipped, or its problems, its facts and how
        many the person had erased (forgotten), what was dropped and why; and the chat model's
        tokens."""
        if self.skipped is not None:
            return {
                "skipped": self.skipped,
                "skip_reason": _SKIP_REASONS.get(self.skipped, SkipReason.MEMORY_OFF),
                "tokens": self.usage.summary(),
            }
        return {
            "skipped": None,
            "problems": self.problems[:50],
            "waiting_for_model": self.waiting_for_model,
            "facts": self.facts,
            "forgotten": self.forgotten,
            "tokens": self.usage.summary(),
            "sensitive": tally(self.sensitive),
            "dropped": dict(sorted(self.dropped.items())),
        }

    def count(self, action: Action) -> int:
        return sum(1 for e in self.events if e.action == action)

    @property
    def held(self) -> list[str]:
        """Ids of the candidate facts this turn left for review."""
        return [
            e.fact_id
            for e in self.events
            if e.action == Action.CREATE and (e.after or {}).get("status") == Status.CANDIDATE
        ]


class WriteStore(AccountStore, ConversationStore, FactStore, SearchStore, UsageStore, Protocol):
    """What learning reads and writes: the user and agent, the turn's messages, the facts it
    finds by hash and by meaning or words, the commit, and the chat model's tokens."""


def _failed(problems: list[str], exc: ModelError) -> WriteReport:
    return WriteReport(problems=problems, retry=isinstance(exc, ModelUnavailable), failure=exc.reason)


def new_writer(
    store: WriteStore,
    embedder: Embedder,
    chat: ChatModel | None,
    settings: WriteSettings,
    clock: Callable[[], datetime],
    forgotten: Forgotten,
) -> Writer:
    """A writer that extracts with the chat model, or without one only what is asked for
    explicitly ("remember that …"), and drops what the person erased (`forgotten`)."""
    extractor = (
        ModelExtractor(chat, exchanges=settings.exchanges, max_facts=settings.max_new_facts)
        if chat is not None
        else ExplicitExtractor()
    )
    return Writer(store, embedder, extractor, chat, settings, clock, forgotten)


class Writer:
    def __init__(
        self,
        store: WriteStore,
        embedder: Embedder,
        extractor: Extractor,
        chat: ChatModel | None,
        settings: WriteSettings,
        clock: Callable[[], datetime],
        forgotten: Forgotten,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.chat = chat
        self.settings = settings
        self.clock = clock
        self.forgotten = forgotten

    async def _enabled(self, scope: Scope, server_mode: MemoryMode | None) -> bool:
        user = await self.store.get_user(scope.user_id)
        if user is None:
            raise NotFound(f"no user {scope.user_id}")
        return memory_enabled(server_mode, user.memory_enabled)

    async def _agent_alive(self, scope: Scope) -> bool:
        try:
            await self.store.get_agent(scope.user_id, scope.agent_id or "")
        except NotFound:
            return False
        return True

    async def remember(
        self, turn: Turn, server_mode: MemoryMode | None, *, actor: str = "extractor"
    ) -> WriteReport:
        """Store a finished turn's messages and learn from it now (no queue)."""
        scope = Scope(turn.scope.user_id, turn.scope.agent_id)
        if turn.automation:
            return WriteReport(skipped=AUTOMATION)
        if not await self._enabled(scope, server_mode):
            return WriteReport(skipped="memory is off for this user")
        now = turn.at or self.clock()
        conversation_id = turn.conversation_id or new_id()
        user = await self.store.get_user(scope.user_id)
        assert user is not None  # _enabled found them
        said, notices, found = screened_messages(scope.user_id, turn.messages, user.gate, conversation_id)
        earlier = (
            echoed(await self.store.conversation_messages(scope.user_id, conversation_id), found)
            if found
            else []
        )
        messages = await self.store.save_messages(
            scope, conversation_id, said, now, notices=notices, rewrites=earlier
        )
        return await self.learn(scope, messages, conversation_id, now, server_mode, actor=actor)

    async def learn(
        self,
        scope: Scope,
        messages: list[Message],
        conversation_id: str,
        at: datetime,
        server_mode: MemoryMode | None,
        *,
        actor: str = "extractor",
        claim: Claim | None = None,
        mark: BackfillMark | None = None,
        said_at: datetime | None = None,
        earlier: dict[str, list[str]] | None = None,
    ) -> WriteReport:
        """Learn from stored messages. With a claim, the job is finished in the same
        transaction as the facts, unless the report asks for a retry or tells of a failure;
        with a backfill mark, likewise the mark moves on, unless the turn was skipped (memory
        off). `earlier`: the facts a pass without a chat model learnt from these messages
        (a waiting job's), which this pass neither reinforces nor forgets to report."""
        own = frozenset((earlier or {}).get("created", ())) | frozenset((earlier or {}).get("held", ()))
        spent = TokenUsage()
        for tries in range(1, _PLANS + 1):
            report, planned = await self.plan(
                scope, messages, conversation_id, at, server_mode, actor=actor, said_at=said_at, own=own
            )
            spent = report.usage = spent + report.usage
            report.waiting_for_model = self.chat is None
            report.facts = learnt_facts(planned, earlier)
            marks = mark is not None and report.skipped is None
            failed = claim is not None and report.failure is not None
            refused = gate_notices("memory", [d for d in report.sensitive if d[1] == GateAction.BLOCK])
            if report.retry or failed or not (planned or refused or claim is not None or marks):
                break
            finish = (claim, report.summary()) if claim is not None else None
            learnt = LearntFrom(
                tuple(await self.forgotten.every_digest(scope.user_id, [c.fact.text for c in planned])),
                tuple(m for c in planned if c.action == Action.CREATE for m in c.fact.source.message_ids),
            )
            try:
                report.events = await self.store.commit(
                    scope.user_id,
                    planned,
                    at,
                    finish=finish,
                    mark=mark if marks else None,
                    learnt_from=learnt,
                    notices=refused,
                )
            except Duplicate:
                # another write made one of these facts meanwhile: planned again, it is reinforced
                if tries < _PLANS:
                    continue
                report.problems.append("not applied: memory kept changing meanwhile")
                report.retry = True
            except Conflict as exc:
                report.problems.append(f"not applied, memory changed meanwhile: {exc}")
                report.retry = True
            except NotFound:
                if scope.agent_id is None or tries == _PLANS or await self._agent_alive(scope):
                    raise
                continue  # its agent was deleted meanwhile: planned again, the turn is skipped
            break
        if report.problems:
            # the problems quote what the model said about the person: counts only
            # at warning level, the details at debug level
            turn = f"turn {claim.job_id}" if claim is not None else "turn"
            log.warning("%s of user %s: %d problem(s)", turn, scope.user_id, len(report.problems))
            for problem in report.problems:
                log.debug("%s of user %s: %s", turn, scope.user_id, problem)
        return report

    async def plan(
        self,
        scope: Scope,
        messages: list[Message],
        conversation_id: str,
        now: datetime,
        server_mode: MemoryMode | None,
        *,
        actor: str = "extractor",
        said_at: datetime | None = None,
        own: frozenset[str] = frozenset(),
    ) -> tuple[WriteReport, list[Change]]:
        """What learning from these messages would change, committing nothing: the report
        (problems, skipped, retry; no events) and the changes `learn` would apply.

        `now` stamps the changes; `said_at` (default `now`) is the date the extractor
        reads relative dates against, for messages said in the past (backfill).
        """
        if not await self._enabled(scope, server_mode):
            return WriteReport(skipped="memory is off for this user"), []
        with metered() as meter:
            try:
                report, planned = await self._plan(
                    scope, messages, conversation_id, now, server_mode, actor, said_at, own
                )
            except NotFound:
                if scope.agent_id is None or await self._agent_alive(scope):
                    raise
                # deleted before, or while, the models thought
                report, planned = WriteReport(skipped=AGENT_GONE), []
            finally:  # spent, whatever came of it: counted into the person's day
                if meter.usage.calls:
                    await self.store.add_usage(scope.user_id, utc_day(self.clock()), meter.usage)
        report.usage = meter.usage
        return report, planned

    async def _plan(
        self,
        scope: Scope,
        messages: list[Message],
        conversation_id: str,
        now: datetime,
        server_mode: MemoryMode | None,
        actor: str,
        said_at: datetime | None,
        own: frozenset[str],
    ) -> tuple[WriteReport, list[Change]]:
        report = WriteReport()
        if scope.agent_id is not None:
            await self.store.get_agent(scope.user_id, scope.agent_id)  # NotFound: it is gone
        try:
            extracted = await self.extractor.extract(messages, conversation_id, said_at or now)
        except ModelError as exc:
            return _failed([f"extraction: {exc}"], exc), []
        report.problems += extracted.problems
        report.dropped.update(extracted.dropped)
        if extracted.unreadable:
            report.failure = FailReason.INVALID_REPLY
            return report, []
        proposals = _unique(extracted.proposals)
        if len(extracted.proposals) > self.settings.max_new_facts:
            report.problems.append(f"only the first {self.settings.max_new_facts} new facts kept")
        if len(proposals) > self.settings.max_new_facts:
            report.dropped[f"over the limit of {self.settings.max_new_facts} new facts"] += (
                len(proposals) - self.settings.max_new_facts
            )
            proposals = proposals[: self.settings.max_new_facts]
        user = await self.store.get_user(scope.user_id)
        assert user is not None
        proposals, gates = _through_gate(proposals, user.gate, report)
        erased = await self.forgotten.dropped(scope.user_id, [p.text for p in proposals])
        if erased:  # the person erased these words: never learnt again
            proposals = [p for p in proposals if p.text not in erased]
            report.forgotten = len(erased)
            report.dropped[ERASED] += len(erased)
        if not proposals:
            return report, []
        aids = [aid for p in proposals for aid in (p.topic, p.replaces) if aid]
        vectors = await self.embedder.embed([p.text for p in proposals])
        # a topic question or a generic form is never stored: it only searches what is
        aid_vectors = iter(await self.embedder.embed_queries(aids) if aids else [])
        cues = [
            _Cues(next(aid_vectors) if p.topic else None, next(aid_vectors) if p.replaces else None)
            for p in proposals
        ]
        ops, to_reconcile = await self._compare(scope, proposals, vectors, cues)
        if to_reconcile:
            assert self.chat is not None  # without a chat model, _compare leaves nothing to reconcile
            try:
                reconciled = await reconcile(self.chat, to_reconcile)
            except ModelError as exc:
                return _failed([*report.problems, f"reconciliation: {exc}"], exc), []
            ops += reconciled.ops
            report.problems += reconciled.problems
        # the same turn, learnt again with a model, is no second mention of what it said
        ops = [op for op in ops if not (op.kind == Action.REINFORCE and op.target and op.target.id in own)]
        ruled = [_held_if_sensitive(r, gates) for r in rule(ops, user.review_policy, self.settings)]
        vector_of = {p.text: v for p, v in zip(proposals, vectors, strict=True)}
        planned = _Plan(scope, now, self.embedder.model_name, actor, vector_of)
        planned.notes = {text: g.note for text, g in gates.items() if g.note}
        for r in ruled:
            planned.add(r, report)
        # the person may have switched memory off while the models were thinking
        if not await self._enabled(scope, server_mode):
            return WriteReport(skipped="memory was switched off during the turn"), []
        return report, planned.changes

    async def _compare(
        self,
        scope: Scope,
        proposals: Sequence[Proposal],
        vectors: np.ndarray,
        cues: Sequence[_Cues],
    ) -> tuple[list[Op], list[tuple[Proposal, list[Fact]]]]:
        """Look for each new fact in the whole scoped store, not only in what recall showed:
        the same text, the nearest facts to it, to its topic question and to the older fact's
        form it replaces, the lexical matches."""
        ops: list[Op] = []
        to_reconcile: list[tuple[Proposal, list[Fact]]] = []
        model = self.embedder.model_name
        k = self.settings.related_k
        floors = (self.settings.topic_floor, self.settings.replaces_floor)
        for proposal, vector, cue in zip(proposals, vectors, cues, strict=True):
            same = await self.store.find_by_hash(scope, text_hash(proposal.text))
            if same:
                ops.append(Op(Action.REINFORCE, proposal, same[0], "restated"))
                continue
            waiting = await self.store.find_by_hash(
                scope, text_hash(proposal.text), statuses=(Status.CANDIDATE,)
            )
            if waiting:  # said again while the first saying waits for review: one candidate
                ops.append(Op(Action.REINFORCE, proposal, waiting[0], "restated while waiting for review"))
                continue
            near = await self.store.nearest(scope, vector, model, k)
            if (
                near
                and near[0].score >= self.settings.duplicate_similarity
                and same_particulars(proposal.text, near[0].fact.text)
            ):
                ops.append(
                    Op(Action.REINFORCE, proposal, near[0].fact, f"near-duplicate ({near[0].score:.2f})")
                )
                continue
            related = {s.fact.id: s.fact for s in near if s.score >= self.settings.related_floor}
            for cue_vector, floor in zip(cue, floors, strict=True):
                if cue_vector is not None:
                    for s in await self.store.nearest(scope, cue_vector, model, k):
                        if s.score >= floor:
                            related.setdefault(s.fact.id, s.fact)
            for s in await self.store.lexical(scope, proposal.text, k):
                related.setdefault(s.fact.id, s.fact)
            if related and self.chat is not None:
                to_reconcile.append((proposal, list(related.values())))
            else:
                ops.append(Op(Action.CREATE, proposal))
        return ops, to_reconcile


class _Cues(NamedTuple):
    """What else a new fact is looked for by: its topic question's vector, and its older form's."""

    topic: np.ndarray | None
    replaces: np.ndarray | None


class _Plan:
    """Turns ruled operations into Changes, chaining versions when one fact is touched twice."""

    def __init__(
        self, scope: Scope, now: datetime, model: str, actor: str, vector_of: dict[str, np.ndarray]
    ) -> None:
        self.scope, self.now, self.model, self.actor = scope, now, model, actor
        self.vector_of = vector_of
        self.changes: list[Change] = []
        self.current: dict[str, Fact] = {}
        self.notes: dict[str, str] = {}  # what the sensitive-data gate did to a proposal's text

    def _latest(self, fact: Fact) -> Fact:
        return self.current.get(fact.id, fact)

    def _push(self, change: Change) -> Fact:
        self.changes.append(change)
        self.current[change.fact.id] = change.fact
        return change.fact

    def _new(
        self, p: Proposal, status: Status, supersedes: str | None = None, reason: str | None = None
    ) -> Fact:
        fact = changes.new_fact(
            self.scope,
            p.text,
            now=self.now,
            source=p.source,
            status=status,
            category=p.category,
            confidence=p.confidence,
            valid_from=p.valid_from,
            valid_to=p.valid_to,
            embedding_model=self.model,
            supersedes=supersedes,
        )
        reason = "; ".join(filter(None, [reason, p.note, self.notes.get(p.text)])) or None
        return self._push(changes.create(fact, self.vector_of[p.text], self.actor, reason))

    def add(self, ruled: Ruled, report: WriteReport) -> None:
        """Apply one ruled operation to the plan; one refused, or that memory as it stands
        does not allow, is dropped and the report says why."""
        op, p = ruled.op, ruled.op.proposal
        target = self._latest(op.target) if op.target else None
        try:
            if ruled.verdict == "refuse":
                report.problems.append(ruled.why or "refused")
                report.dropped[ruled.why or "refused"] += 1
            elif ruled.verdict == "hold":
                held = held_reason(ruled.why or "")
                self._new(p, Status.CANDIDATE, target.id if target else None, held)
            elif op.kind is Action.CREATE:
                self._new(p, Status.ACTIVE, reason=op.reason)
            elif target is None:
                raise AssertionError(f"{op.kind} names no fact to change")
            elif op.kind is Action.REINFORCE:
                again = self._push(
                    changes.reinforce(target, now=self.now, actor=self.actor, reason=op.reason)
                )
                end = changes.restated_end(again, p.valid_to, self.now)
                if end != again.valid_to:
                    # said again with an end of its own ("this week", a month later), or with none
                    # after its end passed (true again now): the new saying holds
                    self._push(changes.end(again, end, now=self.now, actor=self.actor))
            elif op.kind is Action.EDIT:
                self._push(
                    changes.edit(
                        target,
                        p.text,
                        now=self.now,
                        vector=self.vector_of[p.text],
                        embedding_model=self.model,
                        actor=self.actor,
                        reason=op.reason,
                    )
                )
            elif op.kind is Action.SUPERSEDE and op.ends:
                if target.status != Status.ACTIVE:
                    raise InvalidInput(f"cannot end a memory that is {target.status}")
                if target.valid_from is not None and target.valid_from >= self.now:
                    raise InvalidInput("cannot end a memory that has not begun")
                self._new(p, Status.ACTIVE, reason=op.reason)
                if target.valid_to is None or target.valid_to > self.now:  # already over: as it is
                    over = op.reason or f"over: {p.text}"
                    self._push(changes.end(target, self.now, now=self.now, actor=self.actor, reason=over))
            elif op.kind is Action.SUPERSEDE:
                if target.status != Status.ACTIVE:
                    raise InvalidInput(f"cannot supersede a memory that is {target.status}")
                new = self._new(p, Status.ACTIVE, target.id, op.reason)
                self._push(changes.supersede(target, new, now=self.now, actor=self.actor, reason=op.reason))
            elif op.kind is Action.RETRACT:
                reason = op.reason or f"no longer true: {p.text}"
                self._push(changes.retract(target, now=self.now, actor=self.actor, reason=reason))
            else:
                assert_never(op.kind)
        except InvalidInput as exc:
            said = _SAID.get(op.kind, op.kind)
            report.problems.append(f"{said} of {p.text!r} skipped: {exc}")
            report.dropped[f"{said}: not possible on memory as it is now"] += 1


# how a skipped operation is named in the turn's problems (the reconciler's words)
_SAID: dict[Action, str] = {Action.CREATE: "add", Action.EDIT: "update"}


_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# negation in the languages people most often write to mnemo in: English, German, French,
# Spanish, Portuguese, Italian, Dutch ("Ich trinke keinen Kaffee" is not "Ich trinke Kaffee")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|neither|nor|without"
    r"|nicht|kein|keine|keinen|keinem|keiner|keines|nie|niemals|nichts|ohne"
    r"|ne|pas|jamais|aucun|aucune|rien|sans"
    r"|nunca|nada|nadie|ningún|ninguno|ninguna|ni|sin|não|nem|nenhum|nenhuma|sem"
    r"|non|nessuno|nessuna|niente|senza"
    r"|niet|geen|nooit|zonder)\b|n't\b",
    re.IGNORECASE,
)


def same_particulars(a: str, b: str) -> bool:
    """Whether two sentences agree on the details embeddings blur: numbers and negation.

    "My flight is on May 3" and "…May 4" embed at 0.97; they are not one fact.
    """
    return _NUMBER.findall(a) == _NUMBER.findall(b) and len(_NEGATION.findall(a)) == len(_NEGATION.findall(b))


def _through_gate(
    proposals: list[Proposal], policy: GatePolicy, report: WriteReport
) -> tuple[list[Proposal], dict[str, FactGate]]:
    """The proposals the person's sensitive-data gate lets through, their texts redacted; what
    it did to each (by the text it let through). A blocked one is dropped with a problem that
    names its category, never its value."""
    kept: list[Proposal] = []
    gates: dict[str, FactGate] = {}
    for p in proposals:
        gated = gate_fact(p.text, policy)
        report.sensitive += gated.done
        if gated.blocked:
            report.problems.append(f"a proposed memory was not stored: {blocked_message(gated.blocked)}")
            report.dropped[blocked_message(gated.blocked)] += 1
            continue
        # the search aids are only embedded, never stored: every value the policy does not allow
        # is masked in them, whatever it does to the text
        topic, replaces = (screen(aid, policy).masked if aid else None for aid in (p.topic, p.replaces))
        kept.append(dataclasses.replace(p, text=gated.text, topic=topic, replaces=replaces))
        if gated.done:
            gates[gated.text] = gated
    return _unique(kept), gates


def _held_if_sensitive(ruled: Ruled, gates: dict[str, FactGate]) -> Ruled:
    """A new or changed memory holding what the person's gate holds waits for their review."""
    gated = gates.get(ruled.op.proposal.text)
    if gated is None or not gated.held or ruled.verdict == "hold":
        return ruled
    if ruled.op.kind in (Action.REINFORCE, Action.RETRACT):
        return ruled
    return Ruled(ruled.op, "hold", gated.hold_reason)


def _unique(proposals: list[Proposal]) -> list[Proposal]:
    seen: set[str] = set()
    out = []
    for p in proposals:
        key = text_hash(p.text)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
