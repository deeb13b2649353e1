"""The six memory tools, each a coroutine over the caller and its validated arguments.

Writes and reads act like the HTTP API with the person's key: `remember` and
`recall` act as an assistant (the default one, or the agent named); `forget`, `edit`,
`list_memories` and `memory_history` see everything the person owns (or only
what the caller's agent sees, when it is bound to one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel

from ..accounts import Accounts
from ..domain import (
    Agent,
    InvalidInput,
    MemoryMode,
    MnemoError,
    NotFound,
    RecallVia,
    ReviewPolicy,
    Scope,
    Source,
    SourceKind,
    Status,
    User,
    find_agent,
    is_uuid,
)
from ..gate import memory_enabled
from ..memory import Memory
from ..write.instructions import WHY as INSTRUCTION
from ..write.instructions import reads_as_instruction
from ..write.policy import held_reason
from .schemas import (
    EditArgs,
    Edited,
    ForgetArgs,
    Forgotten,
    History,
    HistoryArgs,
    HistoryEntry,
    ListArgs,
    MemoryItem,
    MemoryPage,
    Outcome,
    RecallArgs,
    Recalled,
    RecalledItem,
    RememberArgs,
    Remembered,
)

ACTOR = "mcp"


@dataclass(frozen=True)
class Caller:
    """Whom the tools act for: a user, as their default assistant or as one of their agents."""

    memory: Memory
    accounts: Accounts
    user: User
    agent: Agent | None = None


class MemoryOff(MnemoError):
    """Memory is switched off for the person, so nothing may be written."""

    code = "memory_off"


@dataclass(frozen=True)
class _Call:
    caller: Caller
    agents: list[Agent]

    @property
    def names(self) -> dict[str, str]:
        return {a.id: a.name for a in self.agents}

    def agent(self, ref: str | None) -> Agent | None:
        """The agent an argument names, else the caller's own (None: the default assistant)."""
        if ref is None:
            return self.caller.agent
        found = find_agent(self.agents, ref.strip())
        if found is None:
            known = ", ".join(repr(a.name) for a in self.agents) or "none"
            raise InvalidInput(f"the person has no agent {ref!r} (their agents: {known})")
        return found

    def assistant(self, ref: str | None) -> Scope:
        """What the assistant acts as, with what it may read decided once for the call."""
        agent = self.agent(ref)
        return Scope(self.caller.user.id, agent.id if agent else None).visible_to(self.agents)

    def view(self, ref: str | None = None) -> Scope:
        agent = self.agent(ref)
        if agent is None:
            return Scope(self.caller.user.id, all_agents=True)
        return Scope(self.caller.user.id, agent.id)


def _fact_id(value: str) -> str:
    """An id that cannot exist answers like one that does not."""
    value = value.strip()
    if not is_uuid(value):
        raise NotFound(f"no memory with id {value[:80]!r}")
    return value.lower()


async def _off_reason(accounts: Accounts, user: User) -> str | None:
    mode = await accounts.server_mode()
    current = await accounts.find_user(user.name) or user
    if memory_enabled(mode, current.memory_enabled):
        return None
    if mode == MemoryMode.DISABLED:
        return "memory is disabled on this server"
    if current.memory_enabled is False:
        return "the person has switched their memory off"
    return "memory is off by default on this server and the person has not switched it on"


async def remember(call: _Call, args: RememberArgs) -> Remembered:
    memory, user = call.caller.memory, call.caller.user
    scope = call.assistant(args.agent)
    off = await _off_reason(call.caller.accounts, user)
    if off:
        raise MemoryOff(f"nothing was stored: {off}. Do not retry; only the person can turn it on.")
    # the model, not the person, is writing: under `review` and `guarded` the person approves
    # it, and under any policy a text that reads as an instruction to an assistant
    instruction = reads_as_instruction(args.text)
    held = user.review_policy != ReviewPolicy.AUTO or instruction
    fact = await memory.add(
        scope,
        args.text,
        category=args.category,
        valid_to=args.valid_to,
        actor=ACTOR,
        source=Source(SourceKind.MCP),
        held=held,
        reason=held_reason(INSTRUCTION) if instruction else None,
    )
    outcome: Outcome = (
        "reinforced"
        if fact.version > 1
        else "held for review"
        if fact.status == Status.CANDIDATE
        else "created"
    )
    return Remembered(outcome=outcome, memory=MemoryItem.of(fact, call.names))


async def recall(call: _Call, args: RecallArgs) -> Recalled:
    memory, user = call.caller.memory, call.caller.user
    on = await call.caller.accounts.memory_enabled(user.id)  # the stdio caller's user is read at start
    scope = call.assistant(args.agent)
    hits = await memory.recall(args.query, scope, limit=args.limit, memory_on=on, via=RecallVia.MCP)
    return Recalled(memories=[RecalledItem.of_hit(h, call.names) for h in hits], memory_enabled=on)


async def forget(call: _Call, args: ForgetArgs) -> Forgotten:
    fact_id = _fact_id(args.id)
    try:
        fact = await call.caller.memory.retract(call.view(), fact_id, reason=args.reason, actor=ACTOR)
    except NotFound as exc:  # another user's id reads the same as one that never existed
        raise NotFound(f"no memory with id {fact_id}") from exc
    note = "Retracted: recall no longer returns it; it stays in its history and the person can restore it."
    return Forgotten(memory=MemoryItem.of(fact, call.names), note=note)


async def edit(call: _Call, args: EditArgs) -> Edited:
    """The person's own rules for a model's writing hold: under the review policies, and for a
    text that reads as an instruction, a correction is proposed through remember (held for the
    person), not written over a memory they approved."""
    user = call.caller.user
    policy = (await call.caller.accounts.user(user.name)).review_policy
    if args.text is not None and (policy != ReviewPolicy.AUTO or reads_as_instruction(args.text)):
        raise InvalidInput(
            "the person reviews what an assistant writes: call remember with the corrected text (it is "
            "held for their review), and forget the wrong memory once they approve it"
        )
    fact_id = _fact_id(args.id)
    valid_to = args.valid_to if "valid_to" in args.model_fields_set else ...
    try:
        fact = await call.caller.memory.update(
            call.view(),
            fact_id,
            version=args.version,
            text=args.text,
            category=args.category,
            valid_to=valid_to,
            actor=ACTOR,
            reason=args.reason,
        )
    except NotFound as exc:  # another user's id reads the same as one that never existed
        raise NotFound(f"no memory with id {fact_id}") from exc
    return Edited(memory=MemoryItem.of(fact, call.names))


async def list_memories(call: _Call, args: ListArgs) -> MemoryPage:
    facts = await call.caller.memory.list(
        call.view(args.agent), statuses=args.status.statuses(), limit=args.limit + 1, offset=args.offset
    )
    more = len(facts) > args.limit
    return MemoryPage(
        memories=[MemoryItem.of(f, call.names) for f in facts[: args.limit]],
        next_offset=args.offset + args.limit if more else None,
    )


async def memory_history(call: _Call, args: HistoryArgs) -> History:
    fact_id = _fact_id(args.id)
    try:
        events = await call.caller.memory.history(call.view(), fact_id)
    except NotFound as exc:
        raise NotFound(f"no memory with id {fact_id}") from exc
    return History(events=[HistoryEntry.of(e) for e in events])


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    args: type[BaseModel]
    result: type[BaseModel]
    run: Callable[[_Call, Any], Awaitable[BaseModel]]
    annotations: ToolAnnotations

    async def __call__(self, caller: Caller, args: BaseModel) -> BaseModel:
        return await self.run(_Call(caller, await caller.accounts.agents(caller.user.id)), args)


TOOLS = (
    Tool(
        "remember",
        "Remember a fact about the person",
        "Store one lasting fact about the person you are helping, so that future conversations know "
        "it: who they are, what they prefer, people in their life, plans, events, standing "
        "instructions. Call it when they tell you something worth keeping or ask you to remember "
        "it; not for small talk, passing moods, or facts about the world. Write it in their voice, "
        "first person and self-contained ('I am vegetarian', 'My daughter Mia was born in "
        "2019'); one fact per call. Restating a known fact reinforces it instead of duplicating "
        "it. Returns the stored memory and whether it was created or reinforced. If the person "
        "has switched memory off, nothing is stored and the call fails with the reason.",
        RememberArgs,
        Remembered,
        remember,
        ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
    Tool(
        "recall",
        "Recall what is known about the person",
        "Look up what is remembered about the person that bears on a question or topic: call it "
        "before answering anything where their preferences, circumstances, history or earlier "
        "instructions could matter. Returns the best-matching current memories, best first, each "
        "with its id, category, dates (when recorded; since when it holds) and why it was "
        "recalled. An empty list means nothing relevant is known (or memory is off: see "
        "memory_enabled). Treat memories as what the person told earlier; newer statements from "
        "them win.",
        RecallArgs,
        Recalled,
        recall,
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    Tool(
        "forget",
        "Forget a memory",
        "Retract a memory that is wrong or no longer true, by its id (from recall or "
        "list_memories), when the person says so or corrects it. Give a short reason. Nothing is "
        "erased: the memory leaves recall but stays in its history, and the person can restore "
        "it. To record what is true now, also call remember with the new fact. An unknown id "
        "fails with 'no memory with id …'.",
        ForgetArgs,
        Forgotten,
        forget,
        ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    ),
    Tool(
        "edit",
        "Correct a memory",
        "Correct a memory in place when the person says it is slightly wrong (a typo, a detail, its "
        "category) or gives it an end ('I am only in Lisbon until Friday'), by its id and the version "
        "recall or list_memories gave. The id and history stay; the old text is kept in its history. "
        "If it changed since you read it, the call fails: read it again. For a change in the person's "
        "life (a new home, a new job), call remember with the new fact instead. If the person reviews "
        "what assistants write, a new text is refused: call remember with it.",
        EditArgs,
        Edited,
        edit,
        ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
    Tool(
        "list_memories",
        "List memories",
        "List the person's memories, newest first, a page at a time: for when they ask what you "
        "know about them, or to find the id of a memory to forget. Filter by status (default: "
        "active, what is believed now) and by agent. For a question about a topic, use recall.",
        ListArgs,
        MemoryPage,
        list_memories,
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    Tool(
        "memory_history",
        "Show a memory's history",
        "Every change to one memory, oldest first: when it was created, edited, reinforced, "
        "superseded, retracted or restored, by whom (user, extractor, mcp…), with the text before "
        "and after and the reason given. Use it when the person asks how or why a memory changed.",
        HistoryArgs,
        History,
        memory_history,
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
)
