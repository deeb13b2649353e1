"""Erasure that erases: a memory with the messages it was learnt from, a whole conversation,
each with a signed receipt and with its texts never learnt again (see forgetting.py).

Erasing a memory erases its text (and the same text of its agent's other facts, as
a purge always did) and the text of every message it was learnt from: those its
source names, and any of the person's messages that say it in the same words. A
message keeps its place, role and time, and when it was erased. Other memories
learnt from such a message stay, and lose the words they came from: `plan` lists
them first, so that the person is told before. Erasing a conversation removes it,
its messages, its jobs and its backfill marks; the memories learnt from it go with
it only when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from . import receipts
from .domain import Change, Erasure, Fact, NotFound, Receipt, Scope, Status, new_id, normalise, says
from .forgetting import Forgotten, Secrets
from .store.base import ConversationStore, ErasureStore, FactStore
from .write import changes as make

CONFIRM_EVERYTHING = "erase everything"  # what the person types (or an API client sends) first


class EraseStore(FactStore, ErasureStore, ConversationStore, Protocol):
    """What erasing reads and commits."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What an erasure will take: the memories whose text goes, the messages whose text goes
    (conversation id, message id), the conversations that go whole, and the memories that
    stay but were learnt from one of those messages."""

    kind: str
    facts: tuple[Fact, ...] = ()
    messages: tuple[tuple[str, str], ...] = ()
    conversations: tuple[str, ...] = ()
    cited_by: tuple[Fact, ...] = ()
    keys: bool = False  # everything: the API keys go too, but the one in use


class Eraser:
    def __init__(
        self,
        store: EraseStore,
        forgotten: Forgotten,
        secrets: Secrets,
        clock: Callable[[], datetime],
    ) -> None:
        self.store = store
        self.forgotten = forgotten
        self._secrets = secrets
        self.clock = clock

    async def _key(self) -> receipts.SigningKey:
        return receipts.signing_key(await self._secrets.secret("receipts"))

    async def public_key(self) -> str:
        """The key that checks this server's receipts (base64 of an Ed25519 public key)."""
        return receipts.public_key(await self._key())

    # -- what would go -------------------------------------------------------------------

    async def plan_memory(self, fact: Fact) -> Plan:
        """The fact, its agent's other facts that say the same, the messages they came from or
        that say them, and the other memories learnt from those messages."""
        return await self.plan_selection(fact.user_id, [fact], [], kind="memory")

    async def plan_selection(
        self, user_id: str, chosen: Sequence[Fact], message_ids: Sequence[str], *, kind: str = "selection"
    ) -> Plan:
        """What the person ticked: memories (each as `plan_memory` takes one) and messages
        (NotFound for an id the user has no message by)."""
        taken: dict[str, Fact] = {}  # each once, the chosen first
        for fact in chosen:
            copies = await self.store.find_by_hash(
                Scope(user_id, all_agents=True), fact.text_hash, statuses=tuple(Status)
            )
            for f in [fact, *copies]:
                if f.agent_id == fact.agent_id and not f.purged:
                    taken.setdefault(f.id, f)
        facts = list(taken.values())
        ticked = await self.store.messages_named(user_id, message_ids) if message_ids else []
        missing = set(message_ids) - {mid for _, mid, _ in ticked}
        if missing:
            raise NotFound(f"no message {sorted(missing)[0]!r}")
        cited = [m for f in facts for m in f.source.message_ids]
        named = await self.store.messages_named(user_id, cited) if cited else []
        saying = await self.store.messages_saying(user_id, [f.text for f in facts]) if facts else []
        messages = list(dict.fromkeys((cid, mid) for cid, mid, _ in [*ticked, *named, *saying]))
        return Plan(kind, tuple(facts), tuple(messages), (), await self._citing(user_id, facts, messages))

    async def plan_everything(self, user_id: str) -> Plan:
        """Every memory, conversation, queued turn and API key of the user (but the key in use)."""
        facts = tuple(await self._facts(user_id))
        return Plan("everything", facts, (), tuple(await self.store.conversation_ids(user_id)), (), keys=True)

    async def plan_conversation(self, user_id: str, conversation_id: str, with_facts: bool) -> Plan:
        """The conversation (NotFound if the user has none by that id) and, `with_facts`, the
        memories learnt from it, offered to go with it."""
        if await self.store.conversation_message_ids(user_id, conversation_id) is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        learnt = await self.learnt_from(user_id, conversation_id)
        if with_facts:
            return Plan("conversation", tuple(learnt), (), (conversation_id,))
        return Plan("conversation", (), (), (conversation_id,), tuple(learnt))

    async def about(self, user_id: str, query: str) -> tuple[list[Fact], list[tuple[str, str, str]]]:
        """Every memory (its text still there) and every message (not erased yet) that says the
        words of `query` (domain.says: whole words, case and spacing aside), for the person to
        tick."""
        if not normalise(query):
            return [], []
        facts = [f for f in await self._facts(user_id) if says(f.text, query)]
        return facts, await self.store.messages_saying(user_id, [query])

    async def learnt_from(self, user_id: str, conversation_id: str) -> list[Fact]:
        """The user's memories (not erased) whose source is that conversation."""
        return [f for f in await self._facts(user_id) if f.source.conversation_id == conversation_id]

    async def _facts(self, user_id: str) -> list[Fact]:
        """Every fact of the user whose text is still there."""
        found = await self.store.list_facts(Scope(user_id, all_agents=True), statuses=None, limit=10_000_000)
        return [f for f in found if not f.purged]

    async def _citing(
        self, user_id: str, erased: Sequence[Fact], messages: Sequence[tuple[str, str]]
    ) -> tuple[Fact, ...]:
        gone = {f.id for f in erased}
        ids = {mid for _, mid in messages}
        return tuple(
            f
            for f in await self._facts(user_id)
            if f.id not in gone
            and f.status in (Status.ACTIVE, Status.CANDIDATE)
            and ids & set(f.source.message_ids)
        )

    # -- erasing ---------------------------------------------------------------------------

    async def erase(
        self,
        user_id: str,
        plan: Plan,
        *,
        actor: str,
        reason: str | None = None,
        keep_key: str | None = None,
    ) -> Receipt:
        """Carry out the plan in one transaction; its receipt, signed and kept."""
        now = self.clock()
        batch: list[Change] = []
        first = plan.facts[0].id if plan.facts else None
        for f in plan.facts:
            why = (
                reason
                if f.id == first or plan.kind != "memory"
                else f"said what memory {first} said, which was erased"
            )
            batch.append(make.purge(f, now=now, actor=actor, reason=why))
        message_ids = [mid for _, mid in plan.messages]
        whole = [
            m
            for cid in plan.conversations
            for m in await self.store.conversation_message_ids(user_id, cid) or []
        ]
        forget = [
            *await self.forgotten.of_texts(user_id, [f.text for f in plan.facts]),
            *await self.forgotten.of_messages(user_id, [*message_ids, *whole]),
        ]
        key = await self._key()
        receipt_id = new_id()
        kept: list[Receipt] = []

        def seal(head: str, counts: dict[str, int]) -> Receipt:
            erased: dict[str, Any] = {
                "facts": [f.id for f in plan.facts],
                "messages": message_ids,
                "conversations": list(plan.conversations),
                "counts": {"facts": len(plan.facts), **counts, "never_learnt_again": len(set(forget))},
            }
            r = receipts.seal(
                key,
                receipt_id=receipt_id,
                user_id=user_id,
                at=now,
                kind=plan.kind,
                erased=erased,
                chain_head=head,
            )
            kept.append(r)
            return r

        await self.store.commit(
            user_id,
            batch,
            now,
            erase=Erasure(
                tuple(message_ids),
                plan.conversations,
                tuple(forget),
                seal,
                plan.keys,
                keep_key,
                tuple(f.text for f in plan.facts),
            ),
        )
        return kept[-1]
