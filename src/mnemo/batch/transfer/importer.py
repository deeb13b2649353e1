"""`mnemo import`: a file of conversations or facts, or a mnemo export, into a user's memory.

The whole file is read and checked first: a bad line stops the import before
anything is written, and the error names the line. Then each item is written
in a transaction of its own, and is the same item the next time (a
conversation's id and its messages' ids are derived from the user, the format
and the file's id for it, else its content), so an import that stopped half
way is finished by running it again, and a second run adds nothing.

Conversations are stored for backfill to learn from later (`mnemo backfill`);
nothing is extracted from them here. Facts are added as a person's would be,
with actor `import` and source kind `import`; a fact already held (same text,
in the scope) is left as it is rather than reinforced, so that running an
import again does not count as the person saying it again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ...domain import (
    Agent,
    Conflict,
    Conversation,
    GatePolicy,
    InvalidInput,
    Message,
    Origin,
    Scope,
    Source,
    SourceKind,
    User,
    as_unicode,
    find_agent,
    shift,
    text_hash,
)
from ...sensitive import gate_fact, screen
from ...write.instructions import WHY as INSTRUCTION
from ...write.instructions import reads_as_instruction
from ...write.policy import held_reason
from .formats import (
    FACT_FORMATS,
    ConversationItem,
    FactItem,
    Format,
    chatgpt_conversations,
    detect,
    fact_items,
    openai_conversations,
)
from .report import ImportReport, Step, no_step
from .restore import Destination, read_export, restore
from .tools import claude_conversations, khoj_items, markdown_items, mem0_items

# the namespace of the ids given to imported conversations and messages
NAMESPACE = uuid.UUID("5b0c6f3e-2d7a-4e61-9a57-6d6e656d6f21")
_TICK = timedelta(microseconds=1)


_FACT_READERS = {
    Format.FACTS: fact_items,
    Format.MEM0: mem0_items,
    Format.KHOJ: khoj_items,
    Format.MARKDOWN: markdown_items,
}
_CONVERSATION_READERS = {
    Format.OPENAI: openai_conversations,
    Format.CHATGPT: chatgpt_conversations,
    Format.CLAUDE: claude_conversations,
}


async def import_file(
    to: Destination,
    path: Path,
    *,
    user: str,
    agent: str | None = None,
    fmt: Format = Format.AUTO,
    dry_run: bool = False,
    step: Step = no_step,
    one_user: bool = False,
) -> ImportReport:
    """Import `path` for the user called `user` (created on first use, but not by a dry run).
    A mem0 file's memories go to the users its `user_id`s name (those without one to `user`),
    unless `one_user`: then all go to `user`."""
    fmt = detect(path) if fmt is Format.AUTO else Format(fmt)
    if fmt is Format.MNEMO:
        if agent is not None:
            raise InvalidInput("--agent does not apply to a mnemo export: its agents come with it")
        return await restore(to, read_export(path), user, dry_run=dry_run, step=step)
    if fmt in FACT_FORMATS:
        return await _import_facts(to, _FACT_READERS[fmt](path), fmt, user, agent, one_user, dry_run, step)
    items = _CONVERSATION_READERS[fmt](path)
    target = await to.accounts.find_user(user)
    agents = await to.accounts.agents(target.id) if target else []
    agent_id = _agent_id(agents, agent, user, "--agent")
    report = ImportReport(str(fmt), user, dry_run, user_created=target is None and not dry_run)
    if target is None and not dry_run:
        target = await to.accounts.user(user)
    await _conversations(to, target, agent_id, fmt, items, report, step)
    return report


def _agent_id(agents, name: str | None, user: str, what: str) -> str | None:
    if name is None:
        return None
    found = find_agent(agents, name)
    if found is None:
        raise InvalidInput(f"{what}: user {user!r} has no agent {name!r} (mnemo agents create {name})")
    return found.id


# -- conversations ----------------------------------------------------------------------------


def conversation_of(item: ConversationItem, user_id: str, agent_id: str | None, fmt: Format, now: datetime):
    """The stored form of a file's conversation: ids derived, times in order of saying."""
    cid = str(uuid.uuid5(NAMESPACE, f"{user_id}/{fmt}/{item.key()}"))
    created = item.created_at or next((at for _, _, at in item.messages if at), None) or now
    messages = []
    previous: datetime | None = None
    for i, (role, content, at) in enumerate(item.messages):
        at = at or (shift(previous, _TICK) if previous else created)
        if previous is not None and at <= previous:  # the stored order is the order of times
            at = shift(previous, _TICK)
        messages.append(Message(role, content, str(uuid.uuid5(NAMESPACE, f"{cid}/{i}")), at))
        previous = at
    return Conversation(cid, user_id, agent_id, created, tuple(messages))


async def _conversations(
    to: Destination,
    user: User | None,
    agent_id: str | None,
    fmt: Format,
    items: list[ConversationItem],
    report: ImportReport,
    step: Step,
) -> None:
    kept = [i for i in items if i.messages]
    report.found(conversations=len(kept), conversations_empty=len(items) - len(kept))
    step("conversations", 0, len(kept))
    now = to.memory.clock()
    seen: set[str] = set()
    for item in kept:
        step("conversations", 1, len(kept))
        conversation = conversation_of(item, user.id if user else "", agent_id, fmt, now)
        for m in conversation.messages:
            if m.role == "user" and m.at is not None:
                report.said(m.at)
        if report.dry_run:
            stored = await to.store.conversation_messages(user.id, conversation.id) if user else []
            new = 0 if conversation.id in seen else len(conversation.messages) - len(stored)
            report.conversation(new)
            seen.add(conversation.id)
            continue
        try:
            added, dropped = await to.memory.import_conversation(conversation)
            report.conversation(added)
            report.forgotten += dropped
        except Conflict as exc:
            raise Conflict(f"{item.where}: {exc}") from None


# -- facts --------------------------------------------------------------------------------------


@dataclass
class _Owner:
    """A user the file's facts go to, as found before anything is written."""

    name: str
    user: User | None
    agents: list[Agent]
    agent_id: str | None  # --agent's
    new_agents: list[str]  # named by the file (mem0), made by the import
    items: list[FactItem] = field(default_factory=list)


async def _import_facts(
    to: Destination,
    items: list[FactItem],
    fmt: Format,
    user: str,
    agent: str | None,
    one_user: bool,
    dry_run: bool,
    step: Step,
) -> ImportReport:
    """Facts for their users: every user and agent checked before anything is written."""
    owners: dict[str, _Owner] = {}
    for item in [None, *items]:  # None: the import's own user, checked even for an empty file
        name = user if item is None or one_user or not item.user else item.user
        if name not in owners:
            found = await to.accounts.find_user(name)
            agents = await to.accounts.agents(found.id) if found else []
            owners[name] = _Owner(name, found, agents, _agent_id(agents, agent, name, "--agent"), [])
        owner = owners[name]
        if item is None:
            continue
        owner.items.append(item)
        if item.agent is not None and find_agent(owner.agents, item.agent) is None:
            if fmt is not Format.MEM0:
                _agent_id(owner.agents, item.agent, name, f"{item.where}: agent")
            if item.agent not in owner.new_agents:
                owner.new_agents.append(item.agent)  # mem0's agents are names: made here
    if not owners[user].items and len(owners) > 1:
        del owners[user]
    report = ImportReport(str(fmt), ", ".join(owners), dry_run)
    report.found(facts=len(items))
    step("facts", 0, len(items))
    for owner in owners.values():
        report.users.append(owner.name)
        if owner.user is None and not dry_run:
            owner.user = await to.accounts.user(owner.name)
            report.user_created = True
        report.agents_added += len(owner.new_agents)
        if owner.user is not None and not dry_run:
            for name in owner.new_agents:
                await to.accounts.create_agent(owner.user.id, name)
            owner.agents = await to.accounts.agents(owner.user.id)
        await _facts(to, owner, report, step)
    return report


async def _facts(to: Destination, owner: _Owner, report: ImportReport, step: Step) -> None:
    user, agents = owner.user, owner.agents
    seen: set[tuple[str | None, str]] = set()
    gate = await to.memory.accounts.gate(user.id) if user else GatePolicy()
    for item in owner.items:
        step("facts", 1, len(owner.items))
        gated = gate_fact(item.text, gate)
        if gated.blocked:
            report.blocked += 1
            continue
        text = gated.text  # as the store holds it: a second run finds it present
        known = find_agent(agents, item.agent) if item.agent else None
        own = known.id if known else owner.agent_id
        new_agent = item.agent is not None and known is None  # made by this import: a dry run's
        key = (item.agent if new_agent else own, text_hash(text))
        scope = Scope(user.id, own) if user and not new_agent else None
        same = await to.store.find_by_hash(scope, key[1]) if scope else []
        if same or key in seen:
            report.facts_present += 1
            pins = item.pinned and not reads_as_instruction(text)  # never pins what waits for review
            if scope and same and pins and not same[0].pinned and not report.dry_run:
                await to.memory.pin(scope, same[0].id, actor="import")
            continue
        seen.add(key)
        if user and await to.memory.forgotten.dropped(user.id, [text]):
            report.forgotten += 1  # the person erased it: never learnt again
            continue
        report.facts_added += 1
        # another tool's memory that reads as an instruction to an assistant waits for the
        # person, whatever their review policy, as a learnt one does (write/policy.py)
        instruction = reads_as_instruction(text)
        report.held += instruction
        if not report.dry_run:
            assert scope is not None, "only a dry run imports for a user or agent not made yet"
            await to.memory.add(
                scope,
                text,
                category=item.category,
                pinned=item.pinned and not instruction,
                valid_from=item.valid_from,
                actor="import",
                source=Source(SourceKind.IMPORT, origin=_origin(item, gate)),
                created_at=item.created_at,
                held=instruction,
                reason=held_reason(INSTRUCTION) if instruction else None,
            )


def _origin(item: FactItem, gate: GatePolicy) -> Origin | None:
    """The item's origin, with what the person's gate does not allow masked in its id and its
    details (a mem0 memory's id and metadata are text like any other)."""
    if item.origin is None:
        return None
    return Origin.of(item.origin.tool, _screened(item.origin.id, gate), _screened(item.details, gate))


def _screened(value: Any, gate: GatePolicy) -> Any:
    if isinstance(value, str):
        return screen(as_unicode(value.replace("\x00", "")), gate).masked
    if isinstance(value, list):
        return [_screened(v, gate) for v in value]
    if isinstance(value, dict):
        return {_screened(str(k), gate): _screened(v, gate) for k, v in value.items()}
    return value
