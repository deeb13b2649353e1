"""A fact's story as the fact page tells it: every change with who made it and when, the
conversation messages it came from, and the chain of corrections around it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..domain import CONFIDENCE_CAP, Action, Event, Fact, Message, NotFound, Scope, Source, SourceKind
from ..memory import Memory

_CHAIN_LIMIT = 20  # corrections followed each way; a longer chain is cut, never looped

_ACTIONS = {
    Action.CREATE: "Created",
    Action.EDIT: "Edited",
    Action.SUPERSEDE: "Replaced",
    Action.RETRACT: "Retracted",
    Action.RESTORE: "Restored",
    Action.APPROVE: "Approved",
    Action.UNAPPROVE: "Approval taken back",
    Action.REJECT: "Rejected",
    Action.REINFORCE: "Stated again",
    Action.PIN: "Pinned",
    Action.UNPIN: "Unpinned",
    Action.PURGE: "Erased",
    Action.GATE: "Sensitive data kept out",
}


def actor_label(actor: str) -> str:
    """Who made a change, in words: the person, the extractor, an import, a key…"""
    if actor == "user":
        return "you"
    if actor == "extractor":
        return "the extractor"
    if actor == "import":
        return "an import"
    if actor == "backfill":
        return "a backfill"
    if actor == "admin":
        return "the administrator"
    if actor == "gate":
        return "the sensitive-data gate"
    if actor.startswith("api:"):
        return f"API key {actor[4:]}"
    return actor


def source_label(source: Source) -> str:
    kind = {
        "user_message": "something you said",
        "assistant_message": "something the assistant said",
        "document": "a document you pasted",
        "api": "a direct entry (this page, the API or the command line)",
        "user_edit": "your edit",
        "import": "an import",
        "backfill": "a backfill of past conversations",
        "mcp": "an assistant's remember tool, on your behalf",
    }.get(str(source.kind), str(source.kind))
    if source.extractor_model:
        kind += f", read by {source.extractor_model}"
        if source.prompt_version:
            kind += f" (prompt {source.prompt_version})"
    return kind


_RESTS_ON = {
    SourceKind.USER_MESSAGE: "you: something you said",
    SourceKind.DOCUMENT: "a document you pasted",
    SourceKind.ASSISTANT_MESSAGE: "the assistant: something only it said",
    SourceKind.API: "you, through the API, this page or the command line",
    SourceKind.USER_EDIT: "you: your edit",
    SourceKind.IMPORT: "you: an import of your memories",
    SourceKind.BACKFILL: "a backfill of past conversations",
    SourceKind.MCP: "an assistant's remember tool, on your behalf",
}


def rests_on(source: Source) -> str:
    """Who a fact rests on, in words, with the most confidence that allows."""
    if source.kind == SourceKind.ASSISTANT_MESSAGE and not source.message_ids:
        who = "no message the model could name"
    else:
        who = _RESTS_ON.get(source.kind, str(source.kind))
    cap = CONFIDENCE_CAP.get(source.kind)
    return who if cap is None else f"{who} (its confidence is at most {round(cap * 100)}%)"


@dataclass
class Entry:
    """One event on the timeline."""

    event: Event
    label: str
    actor: str
    before_text: str | None = None
    after_text: str | None = None
    status_change: tuple[str, str] | None = None
    details: list[str] = field(default_factory=list)
    source: Source | None = None
    messages: list[Message] = field(default_factory=list)


@dataclass
class Story:
    fact: Fact
    entries: list[Entry]  # oldest first
    earlier: list[Fact]  # what this fact replaced, nearest first
    later: list[Fact]  # what replaced it, nearest first
    messages: list[Message]  # the messages the fact (as it is now) came from


def _text(snapshot: dict[str, Any] | None) -> str | None:
    return None if snapshot is None else snapshot.get("text")


def entry(event: Event, messages: dict[str, Message]) -> Entry:
    before, after = event.before or {}, event.after or {}
    label = _ACTIONS.get(event.action, str(event.action))
    if event.action == Action.PIN and not after.get("pinned"):  # logged before "unpin" existed
        label = "Unpinned"
    item = Entry(event, label, actor_label(event.actor))
    if event.action == Action.CREATE:
        item.after_text = _text(after)
    elif _text(before) != _text(after):
        item.before_text, item.after_text = _text(before), _text(after)
    if before and after and before.get("status") != after.get("status"):
        item.status_change = (str(before.get("status")), str(after.get("status")))
    if before and after and before.get("category") != after.get("category"):
        item.details.append(f"category {before.get('category')} → {after.get('category')}")
    if (
        before
        and after
        and before.get("valid_to") != after.get("valid_to")
        and after.get("status") == "active"
    ):
        end = after.get("valid_to")
        item.details.append(f"true until {str(end)[:10]}" if end else "no end")
    if event.action == Action.REINFORCE:
        item.details.append(f"mentioned {after.get('mentions')} times")
    source = Source.from_json(after.get("source")) if after.get("source") else None
    if source and (event.action == Action.CREATE or before.get("source") != after.get("source")):
        item.source = source
        item.messages = [messages[i] for i in source.message_ids if i in messages]
    return item


async def _messages(memory: Memory, user_id: str, sources: list[Source]) -> dict[str, Message]:
    """The stored messages named by the sources, by id (one read per conversation)."""
    wanted: dict[str, set[str]] = {}
    for s in sources:
        if s.conversation_id and s.message_ids:
            wanted.setdefault(s.conversation_id, set()).update(s.message_ids)
    found: dict[str, Message] = {}
    for conversation, ids in wanted.items():
        for m in await memory.messages(user_id, conversation, sorted(ids)):
            if m.id:
                found[m.id] = m
    return found


async def source_messages(memory: Memory, user_id: str, facts: list[Fact]) -> dict[str, list[Message]]:
    """For each fact (by id), the messages it came from."""
    found = await _messages(memory, user_id, [f.source for f in facts])
    return {f.id: [found[i] for i in f.source.message_ids if i in found] for f in facts}


async def _follow(memory: Memory, scope: Scope, start: Fact, link: str) -> list[Fact]:
    chain: list[Fact] = []
    seen = {start.id}
    next_id = getattr(start, link)
    while next_id and next_id not in seen and len(chain) < _CHAIN_LIMIT:
        try:
            fact = await memory.get(scope, next_id)
        except NotFound:
            break
        chain.append(fact)
        seen.add(fact.id)
        next_id = getattr(fact, link)
    return chain


async def story(memory: Memory, scope: Scope, fact_id: str) -> Story:
    """NotFound for a fact the scope cannot see (another user's)."""
    fact = await memory.get(scope, fact_id)
    events = await memory.history(scope, fact_id)
    sources = [fact.source] + [
        Source.from_json(e.after["source"]) for e in events if e.after and e.after.get("source")
    ]
    messages = await _messages(memory, scope.user_id, sources)
    return Story(
        fact=fact,
        entries=[entry(e, messages) for e in events],
        earlier=await _follow(memory, scope, fact, "supersedes"),
        later=await _follow(memory, scope, fact, "superseded_by"),
        messages=[messages[i] for i in fact.source.message_ids if i in messages],
    )
