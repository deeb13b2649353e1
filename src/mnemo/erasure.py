"""Erasure that erases: a memory with the messages it was learnt from, a whole conversation,
each with a signed receipt and with its texts never learnt again (see forgetting.py).

Erasing a memory erases its text (and the same text of its agent's other facts, as
a purge always did) and the text of the messages it was learnt from: those its
source names, and those of the person's messages that say it in the same words and
are not much longer (`TAKEN_UP_TO`: a short memory, "I like tea", is said in long
messages about something else too). A message that says it but is longer is
offered, not taken; the person may take it, or leave out any message the plan
takes. The same text active in the person's other agents' memories stays unless
asked (`other_agents`): the plan names it first. A message keeps its place, role
and time, and when it was erased. Other memories learnt from such a message stay,
and lose the words they came from: `plan` lists them first, so that the person is
told before. Erasing a conversation removes it, its messages, its jobs and its
backfill marks; the memories learnt from it go with it only when asked.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from . import receipts
from .domain import Change, Erasure, Fact, NotFound, Receipt, Scope, Status, new_id, normalise, says
from .forgetting import Forgotten, Secrets
from .store.base import ConversationStore, ErasureStore, FactStore
from .write import changes as make

CONFIRM_EVERYTHING = "erase everything"  # what the person types (or an API client sends) first
# a message that says a memory's text is taken with it when at most this many times as long as
# the text, plus this many characters (normalised); a longer one is offered
TAKEN_UP_TO = (3, 100)
EXCERPT = 120  # characters shown on each side of where a long message says the text


class EraseStore(FactStore, ErasureStore, ConversationStore, Protocol):
    """What erasing reads and commits."""


@dataclass(frozen=True, slots=True)
class Said:
    """A message as an erasure's plan shows it: where it is (conversation, when, who said it),
    how long it is, its text or, when long, an excerpt around what it says, and why it is in
    the plan: "learnt from" (a memory's source), "says it", "ticked"."""

    conversation_id: str
    message_id: str
    role: str
    at: datetime
    characters: int
    excerpt: str
    why: str


@dataclass(frozen=True, slots=True)
class Plan:
    """What an erasure will take: the memories whose text goes, the messages whose text goes,
    the conversations that go whole; and what stays, for the person to see first: the memories
    learnt from one of those messages (`cited_by`), the longer messages that say an erased
    text (`offered`) and the same text active in another agent's memory (`elsewhere`)."""

    kind: str
    facts: tuple[Fact, ...] = ()
    said: tuple[Said, ...] = ()
    conversations: tuple[str, ...] = ()
    cited_by: tuple[Fact, ...] = ()
    keys: bool = False  # everything: the API keys go too, but the one in use
    offered: tuple[Said, ...] = ()
    elsewhere: tuple[Fact, ...] = ()

    @property
    def messages(self) -> tuple[tuple[str, str], ...]:
        """(conversation id, message id) of each message whose text goes."""
        return tuple((m.conversation_id, m.message_id) for m in self.said)


def taken_whole(message: str, texts: Sequence[str]) -> bool:
    """Whether a message that says one of `texts` is short enough to be taken with it."""
    times, more = TAKEN_UP_TO
    length = len(normalise(message))
    return any(length <= times * len(normalise(t)) + more for t in texts if says(message, t))


def excerpt(message: str, texts: Sequence[str]) -> str:
    """The message, or, when longer than twice EXCERPT, EXCERPT characters on each side of
    where it says the first of `texts` it says (its opening when that cannot be placed)."""
    if len(message) <= 2 * EXCERPT + 40:
        return message
    found = None
    for text in texts:
        words = re.findall(r"\w+", text)
        if words:
            found = re.search(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", message, re.I)
        if found:
            break
    start, end = (found.start(), found.end()) if found else (0, 0)
    lo, hi = max(0, start - EXCERPT), min(len(message), end + EXCERPT)
    if lo and (space := message.find(" ", lo, start)) != -1:
        lo = space + 1  # from a word's start
    if hi < len(message) and (space := message.rfind(" ", end, hi)) != -1:
        hi = space  # to a word's end
    return ("…" if lo else "") + message[lo:hi].strip() + ("…" if hi < len(message) else "")


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

    async def plan_memory(
        self,
        fact: Fact,
        message_ids: Sequence[str] = (),
        *,
        keep: Collection[str] = (),
        other_agents: bool = False,
    ) -> Plan:
        """The fact, its agent's other facts that say the same (`other_agents`: every agent's),
        the messages they came from or that say them (see `plan_selection`), and the other
        memories learnt from those messages."""
        return await self.plan_selection(
            fact.user_id, [fact], message_ids, kind="memory", keep=keep, other_agents=other_agents
        )

    async def plan_selection(
        self,
        user_id: str,
        chosen: Sequence[Fact],
        message_ids: Sequence[str],
        *,
        kind: str = "selection",
        keep: Collection[str] = (),
        other_agents: bool = False,
    ) -> Plan:
        """What the person ticked: memories (each with its agent's copies of its text, or every
        agent's with `other_agents`) and messages (NotFound for an id the user has no message
        by). With the memories go the messages they were learnt from and the messages that say
        them and are not much longer (`taken_whole`); a longer one is offered; `keep`: messages
        the person leaves out (offered instead)."""
        taken: dict[str, Fact] = {}  # each once, the chosen first
        elsewhere: dict[str, Fact] = {}
        for fact in chosen:
            copies = await self.store.find_by_hash(
                Scope(user_id, all_agents=True), fact.text_hash, statuses=tuple(Status)
            )
            for f in [fact, *copies]:
                if f.purged:
                    continue
                if f.agent_id == fact.agent_id or other_agents:
                    taken.setdefault(f.id, f)
                elif f.status in (Status.ACTIVE, Status.CANDIDATE):
                    elsewhere.setdefault(f.id, f)
        facts = list(taken.values())
        texts = [f.text for f in facts]
        ticked = await self.store.messages_named(user_id, message_ids) if message_ids else []
        missing = set(message_ids) - {mid for _, mid, _ in ticked}
        if missing:
            raise NotFound(f"no message {sorted(missing)[0]!r}")
        cited = [m for f in facts for m in f.source.message_ids]
        named = await self.store.messages_named(user_id, cited) if cited else []
        saying = await self.store.messages_saying(user_id, texts) if facts else []
        found: dict[str, tuple[str, str, str]] = {}  # message id: (conversation id, content, why)
        for why, rows in (("ticked", ticked), ("learnt from", named), ("says it", saying)):
            for cid, mid, content in rows:
                found.setdefault(mid, (cid, content, why))
        places = await self.store.message_places(user_id, list(found))
        said: list[Said] = []
        offered: list[Said] = []
        for mid, (cid, content, why) in found.items():
            if mid not in places or places[mid][2] is not None:
                continue  # erased already (or gone with its conversation)
            role, at, _ = places[mid]
            shown = Said(cid, mid, role, at, len(content), excerpt(content, texts), why)
            goes = mid not in keep and (why != "says it" or taken_whole(content, texts))
            (said if goes else offered).append(shown)
        gone = [(m.conversation_id, m.message_id) for m in said]
        return Plan(
            kind,
            tuple(facts),
            tuple(said),
            cited_by=await self._citing(user_id, facts, gone),
            offered=tuple(offered),
            elsewhere=tuple(f for f in elsewhere.values() if f.id not in taken),
        )

    async def plan_everything(self, user_id: str) -> Plan:
        """Every memory, conversation, queued turn, agent and API key of the user (but the key in
        use, whose label is overwritten); where each memory came from (store.sql.erasure.
        scrub_sources)."""
        facts = tuple(await self._facts(user_id))
        return Plan(
            "everything", facts, conversations=tuple(await self.store.conversation_ids(user_id)), keys=True
        )

    async def plan_conversation(self, user_id: str, conversation_id: str, with_facts: bool) -> Plan:
        """The conversation (NotFound if the user has none by that id) and, `with_facts`, the
        memories learnt from it, offered to go with it."""
        if await self.store.conversation_message_ids(user_id, conversation_id) is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        learnt = await self.learnt_from(user_id, conversation_id)
        if with_facts:
            return Plan("conversation", tuple(learnt), conversations=(conversation_id,))
        return Plan("conversation", conversations=(conversation_id,), cited_by=tuple(learnt))

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
            if plan.kind == "everything":  # where it came from goes too, in the purge's event as well
                f = dataclasses.replace(f, source=f.source.scrubbed())
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
                # everything: the conversations the person named are counted, not named again
                "conversations": [] if plan.kind == "everything" else list(plan.conversations),
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
