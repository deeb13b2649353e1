"""Backfill: learn from past conversations already stored in mnemo, or take back what it learnt.

Khoj's `manage_memories` command, and better. A run walks each chosen user's
conversations that have messages in the lookback window, oldest first, a batch
of conversations at a time, and cuts each into turns: a user message and the
replies that follow it. Each turn in the window is learnt from as the live
writer would have (extraction over that turn and the exchange before it,
reconciliation against the whole store, the review policy), with actor
`backfill`; every fact keeps its source conversation and message.

Exactly once: each turn learnt from is marked in the database (the user
message that opens it, and the run), and the writer writes the mark in the
same transaction as the turn's facts. A turn in the window is learnt from if
and only if it has no mark — or, in a `force` run, a mark of another run. So a
crash or Ctrl-C at any point leaves every turn either learnt and marked, or
neither, and the next run (`resume` continues the interrupted one, with its
window, users and force) learns exactly the turns left. A mark is written only
over the mark that was read (the store answers Conflict otherwise), so two
runs at once cannot learn a turn twice either. Marks are per turn, not a
cursor per conversation: a wider window later still finds the older turns of
a conversation whose newer ones were learnt.

A dry run plans every turn (the models run: they are what knows what would
change) and writes nothing, not even marks; each turn is planned against
memory as it is now, so a fact proposed by two turns is counted twice.

Times: facts and events are stamped when the run writes them (that is when
mnemo came to believe them); the extractor reads relative dates ("last
month") against when the turn was said.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..accounts import Accounts
from ..domain import (
    Action,
    BackfillMark,
    Change,
    ConversationRef,
    Event,
    Fact,
    InvalidInput,
    Message,
    MnemoError,
    NotFound,
    Scope,
    Status,
    User,
    as_utc,
    new_id,
    parse_time,
    shift,
)
from ..store.base import AccountStore, AuditLog, BackfillStore, FactStore
from ..write import changes
from ..write.writer import Writer

ACTOR = "backfill"
RUN_KEY = "backfill:run"  # the current (or last) run, in the server-wide settings
SAMPLES = 5
KINDS = ("create", "update", "supersede", "reinforce", "retract", "held")


class NoModel(MnemoError):
    """Backfill learns with a chat model only."""

    code = "no_model"


@dataclass
class Run:
    """A backfill run, kept in the database so that an interrupted one can be resumed as it was."""

    id: str
    started_at: datetime
    since: datetime | None  # the window's start; None: every message
    users: list[str] | None  # names; None: everyone with conversations
    force: bool = False
    batch_size: int = 10
    finished_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "started_at": self.started_at.isoformat(),
            "since": self.since.isoformat() if self.since else None,
            "users": self.users,
            "force": self.force,
            "batch_size": self.batch_size,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        return cls(
            id=data["id"],
            started_at=parse_time(data["started_at"]),
            since=parse_time(data.get("since")),
            users=data.get("users"),
            force=bool(data.get("force")),
            batch_size=int(data.get("batch_size") or 10),
            finished_at=parse_time(data.get("finished_at")),
        )


@dataclass
class UserReport:
    """What a run did (or, dry, would do) to one user's memory."""

    user: str
    conversations: int = 0  # in the window
    learnt: int = 0  # conversations with at least one turn learnt from (planned, dry)
    done_before: int = 0  # conversations whose every turn in the window an earlier run learnt from
    turns: int = 0  # turns learnt from (planned, dry)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    samples: list[str] = field(default_factory=list)  # some of the new facts' texts
    forgotten: int = 0  # facts the model found that the person had erased: dropped
    problems: list[str] = field(default_factory=list)
    skipped: str | None = None  # why the whole user was left out
    # what the window left out: user messages said before it that no run learnt from
    outside: tuple[int, int, datetime | None] = (0, 0, None)  # conversations, messages, the oldest

    def tally(self, action: Action, status: str | None, text: str | None) -> None:
        if action == Action.CREATE and status == Status.CANDIDATE:
            kind: str | None = "held"
        else:
            kind = {
                Action.CREATE: "create",
                Action.EDIT: "update",
                Action.SUPERSEDE: "supersede",
                Action.REINFORCE: "reinforce",
                Action.RETRACT: "retract",
            }.get(action)
        if kind is None:
            return
        self.counts[kind] += 1
        if action == Action.CREATE and text and len(self.samples) < SAMPLES:
            self.samples.append(text)

    def to_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "skipped": self.skipped,
            "conversations": self.conversations,
            "learnt": self.learnt,
            "done_before": self.done_before,
            "turns": self.turns,
            **self.counts,
            "forgotten": self.forgotten,
            "samples": self.samples,
            "problems": self.problems[:50],
            "outside_window": _outside_json(*self.outside),
        }


def _outside_json(conversations: int, messages: int, oldest: datetime | None) -> dict[str, Any]:
    return {
        "conversations": conversations,
        "user_messages": messages,
        "oldest": oldest.isoformat() if oldest else None,
    }


@dataclass
class Stop:
    """Where a run stopped before its end, and why."""

    user: str
    conversation_id: str | None
    reason: str
    interrupted: bool = False  # Ctrl-C, rather than a failure

    def to_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "conversation_id": self.conversation_id,
            "reason": self.reason,
            "interrupted": self.interrupted,
        }


@dataclass
class Report:
    applied: bool
    run: Run
    users: list[UserReport] = field(default_factory=list)
    stopped: Stop | None = None

    @property
    def totals(self) -> dict[str, int]:
        keys = ("conversations", "learnt", "done_before", "turns", "forgotten")
        out = {k: sum(getattr(u, k) for u in self.users) for k in keys}
        out.update({k: sum(u.counts[k] for u in self.users) for k in KINDS})
        return out

    @property
    def outside(self) -> tuple[int, int, datetime | None]:
        """What the window left out, over every user: conversations, user messages, the oldest."""
        oldest = [u.outside[2] for u in self.users if u.outside[2] is not None]
        return (
            sum(u.outside[0] for u in self.users),
            sum(u.outside[1] for u in self.users),
            min(oldest) if oldest else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "apply" if self.applied else "dry-run",
            "run_id": self.run.id,
            "since": self.run.since.isoformat() if self.run.since else None,
            "force": self.run.force,
            "complete": self.stopped is None,
            "stopped": self.stopped.to_json() if self.stopped else None,
            "totals": self.totals,
            "outside_window": _outside_json(*self.outside),
            "users": [u.to_json() for u in self.users],
        }


@dataclass
class DeleteReport:
    """What `--delete` took back (or, dry, would take back) from each user."""

    applied: bool
    since: datetime | None
    users: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "delete" if self.applied else "delete-dry-run",
            "since": self.since.isoformat() if self.since else None,
            "totals": {k: sum(u[k] for u in self.users) for k in ("retracted", "rejected", "kept_edited")},
            "users": self.users,
        }


def turns(messages: Sequence[tuple[Message, datetime]]) -> list[tuple[int, int]]:
    """A conversation cut into turns: (opener, end) indexes, each a user message and the
    replies after it, up to the next user message (messages before the first one are
    context of the first turn, never a turn of their own)."""
    openers = [i for i, (m, _) in enumerate(messages) if m.role == "user"]
    return list(zip(openers, [*openers[1:], len(messages)][: len(openers)], strict=True))


class BackfillSource(BackfillStore, FactStore, AuditLog, AccountStore, Protocol):
    """What backfill reads and writes: the stored conversations and their marks, the facts and
    their log, and the settings that hold a run."""


class Backfill:
    """One run over an open store (`mnemo.build.Core.backfill` builds one), learning with the
    writer as the live worker does. `progress(user, conversations_done_delta)` is called as it
    goes; `stop_requested()` is asked between turns (Ctrl-C: finish the turn in hand, then stop)."""

    def __init__(
        self,
        store: BackfillSource,
        writer: Writer,
        accounts: Accounts,
        *,
        clock: Callable[[], datetime],
        progress: Callable[[str, int], None] | None = None,
        stop_requested: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store = store
        self.writer = writer
        self.accounts = accounts
        self.clock = clock
        self.progress = progress or (lambda user, n: None)
        self.stop_requested = stop_requested
        self.report: Report | None = None  # as far as it got (read it after an interruption)
        self.current: tuple[str, str] | None = None  # (user name, conversation id) in hand

    # -- the run record -----------------------------------------------------------------

    async def last_run(self) -> Run | None:
        stored = await self.store.get_setting(RUN_KEY)
        return Run.from_json(json.loads(stored)) if stored else None

    async def _save(self, run: Run) -> None:
        await self.store.set_setting(RUN_KEY, json.dumps(run.to_json()))

    async def new_run(
        self,
        *,
        users: list[str] | None = None,
        lookback_days: float | None = 7,
        since: datetime | None = None,
        force: bool = False,
        batch_size: int = 10,
    ) -> Run:
        """A run over the messages of the last `lookback_days`, or, given `since`, of those said
        at or after it (then `lookback_days` is not read)."""
        if batch_size < 1:
            raise InvalidInput("the batch size is at least 1")
        if since is None and lookback_days is not None and lookback_days <= 0:
            raise InvalidInput("the lookback is more than 0 days")
        now = self.clock()
        if since is not None:
            since = as_utc(since)
        elif lookback_days is not None:  # more days than the calendar holds reach back to its start
            since = shift(now, -timedelta(days=min(lookback_days, 4_000_000)))
        return Run(new_id(), now, since, users, force, batch_size)

    async def interrupted_run(self) -> Run:
        run = await self.last_run()
        if run is None or run.finished_at is not None:
            raise NotFound("there is no interrupted backfill to resume")
        return run

    # -- learning -----------------------------------------------------------------------

    async def users(self, names: list[str] | None) -> list[User]:
        if names is None:
            return await self.store.users_with_conversations()
        found = []
        for name in names:
            user = await self.accounts.find_user(name)
            if user is None:
                raise NotFound(f"no user named {name!r}")
            found.append(user)
        return found

    async def plan_users(self, run: Run) -> list[tuple[User, list[ConversationRef]]]:
        """The users of the run and their conversations in its window (the progress bar's total)."""
        users = await self.users(run.users)
        return [(u, await self.store.conversations_since(u.id, run.since)) for u in users]

    async def run(
        self, run: Run, *, apply: bool, planned: list[tuple[User, list[ConversationRef]]] | None = None
    ) -> Report:
        if self.writer.chat is None:
            raise NoModel(
                "backfill needs a chat model (MNEMO_LLM_BASE_URL and MNEMO_LLM_MODEL): without one only"
                " explicit requests could be learnt, and the conversations would be marked as done"
            )
        report = self.report = Report(apply, run)
        if planned is None:
            planned = await self.plan_users(run)
        if apply:
            await self._save(run)
        server_mode = await self.accounts.server_mode()
        for user, conversations in planned:
            ureport = UserReport(user.name, conversations=len(conversations))
            report.users.append(ureport)
            if not await self.accounts.memory_enabled(user.id):
                ureport.skipped = "memory is off for this user"
                self.progress(user.name, len(conversations))
                continue
            if run.since is not None:
                ureport.outside = await self.store.unlearnt_before(user.id, run.since)
            live_agents = {a.id for a in await self.accounts.agents(user.id)}
            for start in range(0, len(conversations), run.batch_size):
                batch = conversations[start : start + run.batch_size]
                ids = [c.id for c in batch]
                said = await self.store.timed_messages(user.id, ids)
                marks = {m.turn_id: m for m in await self.store.backfill_marks(user.id, ids)}
                for conversation in batch:
                    self.current = (user.name, conversation.id)
                    if conversation.agent_id is not None and conversation.agent_id not in live_agents:
                        ureport.problems.append(f"conversation {conversation.id}: its agent was deleted")
                    else:
                        stop = await self._conversation(
                            run,
                            apply,
                            user,
                            conversation,
                            said.get(conversation.id, []),
                            marks,
                            ureport,
                            server_mode,
                        )
                        if stop is not None:
                            report.stopped = stop
                            return report
                    self.progress(user.name, 1)
        self.current = None
        if apply:
            run.finished_at = self.clock()
            await self._save(run)
        return report

    async def _conversation(
        self,
        run: Run,
        apply: bool,
        user: User,
        conversation: ConversationRef,
        said: list[tuple[Message, datetime]],
        marks: dict[str, BackfillMark],
        ureport: UserReport,
        server_mode: Any,
    ) -> Stop | None:
        in_window = [
            (opener, end) for opener, end in turns(said) if run.since is None or said[opener][1] >= run.since
        ]
        pending = []
        for opener, end in in_window:
            turn_id = said[opener][0].id
            assert turn_id is not None, "a stored message has an id"
            mark = marks.get(turn_id)
            if mark is None or (run.force and mark.run_id != run.id):
                pending.append((opener, end, turn_id, mark))
        if not pending:
            if in_window:
                ureport.done_before += 1
            return None
        ureport.learnt += 1
        scope = Scope(user.id, conversation.agent_id)
        messages = [m for m, _ in said]
        for opener, end, turn_id, mark in pending:
            said_at = said[opener][1]
            context = messages[:end]  # the extractor reads the last exchanges of it
            if apply:
                new_mark = BackfillMark(
                    conversation.id,
                    turn_id,
                    run.id,
                    said_at,
                    replaces=mark.run_id if mark is not None else None,
                )
                result = await self.writer.learn(
                    scope,
                    context,
                    conversation.id,
                    self.clock(),
                    server_mode,
                    actor=ACTOR,
                    mark=new_mark,
                    said_at=said_at,
                )
                for e in result.events:
                    ureport.tally(e.action, (e.after or {}).get("status"), (e.after or {}).get("text"))
            else:
                now = self.clock()
                result, planned = await self.writer.plan(
                    scope, context, conversation.id, now, server_mode, actor=ACTOR, said_at=said_at
                )
                for c in planned:
                    ureport.tally(c.action, c.fact.status, c.fact.text)
            ureport.problems += [f"conversation {conversation.id}: {p}" for p in result.problems]
            ureport.forgotten += result.forgotten
            if result.retry or result.skipped is not None:
                reason = result.skipped or "; ".join(result.problems) or "the model was unavailable"
                return Stop(user.name, conversation.id, reason)
            ureport.turns += 1
            if self.stop_requested():
                return Stop(user.name, conversation.id, "interrupted", interrupted=True)
        return None

    # -- taking it back -------------------------------------------------------------------

    async def delete(self, names: list[str] | None, since: datetime | None, *, apply: bool) -> DeleteReport:
        """Retract (active) or reject (held) every fact backfill created and nobody has changed
        since; with `since`, only those learnt from a message said at or after it. Nothing is
        erased: `mnemo restore` brings one back, and the history keeps why it went."""
        report = DeleteReport(apply, since)
        now = self.clock()
        reason = "taken back by mnemo backfill --delete"
        for user in await self.users(names):
            events = await self.store.events(user.id)
            made = {e.fact_id for e in events if e.action == Action.CREATE and e.actor == ACTOR}
            edited = {e.fact_id for e in events if e.fact_id in made and _by_a_person(e)}
            everything = Scope(user.id, all_agents=True)
            facts = [
                f
                for f in await self.store.list_facts(
                    everything, statuses=[Status.ACTIVE, Status.CANDIDATE], limit=1_000_000
                )
                if f.id in made
            ]
            if since is not None:
                facts = await self._said_since(user.id, facts, since)
            kept = [f for f in facts if f.id in edited]
            batch: list[Change] = []
            for f in facts:
                if f.id in edited:
                    continue
                if f.status == Status.ACTIVE:
                    batch.append(changes.retract(f, now=now, actor=ACTOR, reason=reason))
                else:
                    batch.append(changes.reject(f, now=now, actor=ACTOR, reason=reason))
            if apply:
                for start in range(0, len(batch), 500):
                    await self.store.commit(user.id, batch[start : start + 500], now)
            report.users.append(
                {
                    "user": user.name,
                    "retracted": sum(1 for c in batch if c.action == Action.RETRACT),
                    "rejected": sum(1 for c in batch if c.action == Action.REJECT),
                    "kept_edited": len(kept),
                    "samples": [c.fact.text for c in batch[:SAMPLES]],
                }
            )
        return report

    async def _said_since(self, user_id: str, facts: list[Fact], since: datetime) -> list[Fact]:
        """The facts learnt from a message said at or after `since` (a fact that names no
        message: from its conversation's messages)."""
        conversations = sorted({f.source.conversation_id for f in facts if f.source.conversation_id})
        said = await self.store.timed_messages(user_id, conversations)
        when = {m.id: at for found in said.values() for m, at in found}

        def times(f: Fact) -> list[datetime]:
            named = [when[m] for m in f.source.message_ids if m in when]
            return named or [at for _, at in said.get(f.source.conversation_id or "", [])]

        return [f for f in facts if any(t >= since for t in times(f))]


def _by_a_person(event: Event) -> bool:
    """A change a person made (an edit, a pin, an approval…): then the fact is theirs too."""
    return event.action != Action.CREATE and (event.actor == "user" or event.actor.startswith("api:"))
