"""From a finished turn to proposed facts: with a chat model, or from explicit requests only."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..domain import Category, Message, Source, SourceKind, as_utc, capped_confidence, parse_time
from ..providers.base import ChatModel
from ..time_words import MONTHS
from . import extract_prompt
from .ends import end_of
from .parse import parse_items


@dataclass(frozen=True, slots=True)
class Proposal:
    """A fact an extractor believes it learnt, not yet compared with memory."""

    text: str
    source: Source
    category: Category = Category.OTHER
    confidence: float = 0.8
    valid_from: datetime | None = None
    # the question the fact answers ("Where do I live?"): the writer also looks for
    # existing facts near it, since "I moved to Porto" is far from "I live in Lisbon"
    topic: str | None = None
    # for a change, how the older fact would read with its value left open ("I live in …"):
    # nearer to "I live in Lisbon" than "I moved to Porto" or "Where do I live?" are
    replaces: str | None = None
    # what of the model's item was read otherwise than given ("the model's category 'health'
    # is not one of mnemo's: kept as other"): the reason of the fact's creation says it
    note: str | None = None
    # when the words say it stops being true ("this week", "until Friday"): past it, the fact
    # is no longer recalled as true now (it stays, and is found for the time it held)
    valid_to: datetime | None = None

    def __post_init__(self) -> None:
        # confidence follows the source: the person's words, then a pasted document, then the assistant's
        object.__setattr__(self, "confidence", capped_confidence(self.source.kind, self.confidence))

    @property
    def from_user(self) -> bool:
        return self.source.kind == SourceKind.USER_MESSAGE


@dataclass
class Extracted:
    proposals: list[Proposal] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False  # the model's reply held nothing usable
    dropped: Counter[str] = field(default_factory=Counter)  # items that are no fact, by why


class Extractor(Protocol):
    async def extract(self, messages: list[Message], conversation_id: str, now: datetime) -> Extracted: ...


def last_exchanges(messages: list[Message], exchanges: int) -> list[Message]:
    """The tail of the conversation that holds the last `exchanges` user messages."""
    user_positions = [i for i, m in enumerate(messages) if m.role == "user"]
    if not user_positions:
        return []
    start = user_positions[-exchanges] if len(user_positions) >= exchanges else user_positions[0]
    return [m for m in messages[start:] if m.role in ("user", "assistant")]


class ModelExtractor:
    """Asks the chat model for facts, as JSON matching `extract_prompt.Extraction`."""

    def __init__(self, chat: ChatModel, *, exchanges: int = 2, max_facts: int = 20) -> None:
        self.chat = chat
        self.exchanges = exchanges
        self.max_facts = max_facts

    async def extract(self, messages: list[Message], conversation_id: str, now: datetime) -> Extracted:
        window = last_exchanges(messages, self.exchanges)
        if not window:
            return Extracted()
        numbered = [(i, m.role, m.content) for i, m in enumerate(window, start=1)]
        raw = await self.chat.complete_json(
            [
                {"role": "system", "content": extract_prompt.SYSTEM},
                {"role": "user", "content": extract_prompt.user_prompt(numbered, now)},
            ],
            schema=extract_prompt.Extraction.model_json_schema(),
            schema_name="extraction",
        )
        parsed = parse_items(raw, "facts", extract_prompt.ExtractedFact, limit=self.max_facts, unwrap=True)
        out = Extracted(
            problems=[f"extraction: {p}" for p in parsed.problems],
            unreadable=parsed.unreadable,
            dropped=parsed.dropped,
        )
        for place, item in zip(parsed.places, parsed.items, strict=True):
            out.problems += [f"extraction: item {place}: {note}" for note in item.notes]
            message = window[item.message - 1] if item.message and 0 < item.message <= len(window) else None
            speaker = _speaker(item.speaker, message)
            source = Source(
                kind=_KIND_OF[speaker] if speaker else SourceKind.ASSISTANT_MESSAGE,
                conversation_id=conversation_id,
                message_ids=tuple(m for m in [message.id if message else None] if m),
                speaker=speaker,
                extractor_model=self.chat.model_name,
                prompt_version=extract_prompt.VERSION,
            )
            valid_from = _time(item.valid_from, "valid_from", out.problems)
            valid_to = _time(item.valid_to, "valid_to", out.problems)
            if valid_to is not None and valid_from is not None and valid_to <= valid_from:
                out.problems.append("extraction: a valid_to not after its valid_from ignored")
                valid_to = None
            out.proposals.append(
                Proposal(
                    item.text,
                    source,
                    item.category,
                    item.confidence,
                    valid_from,
                    item.topic,
                    item.replaces,
                    "; ".join(item.notes) or None,
                    valid_to,
                )
            )
        return out


_KIND_OF = {
    "user": SourceKind.USER_MESSAGE,
    "assistant": SourceKind.ASSISTANT_MESSAGE,
    "document": SourceKind.DOCUMENT,
}


def _speaker(claimed: str, message: Message | None) -> str | None:
    """Who a fact comes from. Only the user speaks, or pastes a document, in a user
    message: whatever the model claims for an assistant message is the assistant's. A fact
    that names no message of the window (none, 0, past the end) rests on nothing the person
    said: no speaker, and it is treated as the assistant's."""
    if message is None:
        return None
    return "assistant" if message.role != "user" else claimed


def _time(value: str | None, name: str, problems: list[str]) -> datetime | None:
    """An ISO 8601 time every store can hold (in UTC, within the years 1 to 9999 there); None,
    with a problem said, for one that cannot be read."""
    if not value:
        return None
    try:
        parsed = parse_time(value)
        if parsed is None:
            raise ValueError("no time")
        return as_utc(parsed)
    except (ValueError, OverflowError):
        problems.append(f"extraction: unreadable {name} {value[:40]!r} ignored")
        return None


_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
# "remember that …" in English, German, French, Spanish, Portuguese and Italian: what
# follows is kept in the words the person used
_REQUEST = re.compile(
    r"(?:^|[.!?]\s+)(?:(?:please|bitte|por favor|s'il te plaît|per favore),?\s+)?"
    r"(?:remember|note|keep in mind|don't forget|do not forget"
    r"|merk dir|merke dir|denk daran|denke daran|vergiss nicht"
    r"|souviens-toi|rappelle-toi|retiens|n'oublie pas"
    r"|recuerda|acuérdate de|no olvides|ten en cuenta"
    r"|lembra|lembre-se de|lembre|não esqueças|não esqueça"
    r"|ricorda|ricordati)"
    # a full stop after a day's number before a month ("bis 19. Januar") does not end the fact
    rf"(?:,?\s+(?:that|dass|que|che))?\s*[:,]?\s+(?P<fact>(?:[^.!?\n]|(?<=\d)\.(?=\s+(?:{_MONTH_NAMES})\b)){{3,500}})",
    re.IGNORECASE,
)
EXPLICIT_VERSION = "explicit-3"


class ExplicitExtractor:
    """Without a chat model, learn only what the user explicitly asked to be remembered."""

    model_name = "explicit-request"

    async def extract(self, messages: list[Message], conversation_id: str, now: datetime) -> Extracted:
        out = Extracted()
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        if last_user is None:
            return out
        for match in _REQUEST.finditer(last_user.content):
            text = match.group("fact").strip()
            text = text[0].upper() + text[1:]
            source = Source(
                kind=SourceKind.USER_MESSAGE,
                conversation_id=conversation_id,
                message_ids=(last_user.id,) if last_user.id else (),
                speaker="user",
                extractor_model=self.model_name,
                prompt_version=EXPLICIT_VERSION,
            )
            # "remember that until Friday …": the request's own words may give the end
            end = end_of(match.group(0), now)
            out.proposals.append(Proposal(text, source, confidence=1.0, valid_to=end))
        return out
