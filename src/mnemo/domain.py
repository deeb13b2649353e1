"""The plain types of mnemo: facts, events, scopes. No I/O lives here."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from typing import Any, ClassVar, Literal, overload

import uuid_utils


class Status(StrEnum):
    CANDIDATE = "candidate"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    REJECTED = "rejected"


class StatusFilter(StrEnum):
    """A status to list by, or all of them (what the CLI and the API accept)."""

    ACTIVE = Status.ACTIVE.value
    CANDIDATE = Status.CANDIDATE.value
    SUPERSEDED = Status.SUPERSEDED.value
    RETRACTED = Status.RETRACTED.value
    REJECTED = Status.REJECTED.value
    ALL = "all"

    def statuses(self) -> tuple[Status, ...] | None:
        return None if self is StatusFilter.ALL else (Status(self.value),)


class Category(StrEnum):
    IDENTITY = "identity"
    PREFERENCE = "preference"
    RELATIONSHIP = "relationship"
    EVENT = "event"
    PLAN = "plan"
    INSTRUCTION = "instruction"
    OTHER = "other"


class Action(StrEnum):
    CREATE = "create"
    EDIT = "edit"
    SUPERSEDE = "supersede"
    RETRACT = "retract"
    RESTORE = "restore"
    APPROVE = "approve"
    UNAPPROVE = "unapprove"  # an approval taken back: the candidate waits for review again
    REJECT = "reject"
    REINFORCE = "reinforce"
    PIN = "pin"
    UNPIN = "unpin"
    PURGE = "purge"
    GATE = "gate"  # the sensitive-data gate masked or refused something (no fact; GateNotice)


class SourceKind(StrEnum):
    USER_MESSAGE = "user_message"
    ASSISTANT_MESSAGE = "assistant_message"
    DOCUMENT = "document"  # text the user pasted into a message (a web page, an email…)
    API = "api"
    USER_EDIT = "user_edit"
    IMPORT = "import"
    BACKFILL = "backfill"
    MCP = "mcp"  # an assistant's `remember` tool call, on the person's behalf


# The most confidence a learnt fact may have, by what it rests on: the person's own words
# (as the model says), a document they pasted, the assistant's words (or no message the
# model could name). What the person writes themselves (API, edits, imports, MCP) is theirs.
CONFIDENCE_CAP: dict[SourceKind, float] = {SourceKind.DOCUMENT: 0.6, SourceKind.ASSISTANT_MESSAGE: 0.4}


def capped_confidence(kind: SourceKind, confidence: float) -> float:
    """A confidence within what its source allows."""
    return min(confidence, CONFIDENCE_CAP.get(kind, 1.0))


class MemoryMode(StrEnum):
    """Server-wide memory mode, as in Khoj's ServerChatSettings."""

    DISABLED = "disabled"
    ENABLED_DEFAULT_OFF = "enabled_default_off"
    ENABLED_DEFAULT_ON = "enabled_default_on"


class ReviewPolicy(StrEnum):
    AUTO = "auto"
    REVIEW = "review"
    GUARDED = "guarded"


class Sensitive(StrEnum):
    """What the gate on the write path looks for in every message and memory (mnemo.sensitive)."""

    CREDENTIAL = "credential"
    CARD = "card"
    BANK_ACCOUNT = "bank_account"
    GOVERNMENT_ID = "government_id"
    PHONE = "phone"
    EMAIL = "email"


class GateAction(StrEnum):
    """What the gate does with a sensitive value: `block` stores neither it nor a memory that
    holds it; `redact` stores it masked; `hold` masks it in messages and holds a memory that
    holds it for review; `allow` stores it as said."""

    BLOCK = "block"
    REDACT = "redact"
    HOLD = "hold"
    ALLOW = "allow"


GATE_DEFAULTS: dict[Sensitive, GateAction] = {
    Sensitive.CREDENTIAL: GateAction.BLOCK,
    Sensitive.CARD: GateAction.REDACT,
    Sensitive.BANK_ACCOUNT: GateAction.REDACT,
    Sensitive.GOVERNMENT_ID: GateAction.REDACT,
    Sensitive.PHONE: GateAction.ALLOW,
    Sensitive.EMAIL: GateAction.ALLOW,
}


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """A person's choices for the sensitive-data gate: only what differs from the defaults is
    kept, so that a person who never chose follows the defaults."""

    chosen: tuple[tuple[Sensitive, GateAction], ...] = ()

    def action(self, kind: Sensitive) -> GateAction:
        return dict(self.chosen).get(kind, GATE_DEFAULTS[kind])

    def actions(self) -> dict[str, str]:
        """Every category with its action (what a person sees)."""
        return {str(kind): str(self.action(kind)) for kind in Sensitive}

    def choices(self) -> dict[str, str]:
        """What differs from the defaults (what is stored and exported)."""
        return {str(kind): str(action) for kind, action in self.chosen}

    def changed(self, changes: dict[str, str]) -> GatePolicy:
        """This policy with `changes` (category → action) applied; InvalidInput names an
        unknown category or action."""
        merged = {kind: self.action(kind) for kind in Sensitive}
        for name, action in changes.items():
            try:
                kind = Sensitive(name)
            except ValueError:
                raise InvalidInput(f"unknown category {name!r}: one of {', '.join(Sensitive)}") from None
            try:
                merged[kind] = GateAction(action)
            except ValueError:
                known = ", ".join(GateAction)
                raise InvalidInput(f"unknown action {action!r} for {name}: one of {known}") from None
        return GatePolicy(tuple((k, a) for k, a in merged.items() if a != GATE_DEFAULTS[k]))


@dataclass(frozen=True, slots=True)
class GateNotice:
    """What the sensitive-data gate did that no memory's own event records, as the audit log
    keeps it: where (stored `message`s, or a `memory` that was refused), the category, the
    action and in how many messages or memories; never the value. A memory the gate redacted
    or held says so in its own event."""

    where: Literal["message", "memory"]
    category: Sensitive
    action: GateAction
    count: int = 1
    conversation_id: str | None = None

    @property
    def reason(self) -> str:
        if self.where == "memory":
            return f"sensitive data: a memory holding a {self.category} was refused"
        return f"sensitive data: {self.category} masked in {self.count} message(s) (policy: {self.action})"

    def snapshot(self) -> dict[str, Any]:
        return {
            "gate": {
                "where": self.where,
                "category": str(self.category),
                "action": str(self.action),
                "count": self.count,
                "conversation_id": self.conversation_id,
            }
        }


def gate_notices(
    where: Literal["message", "memory"],
    done: Iterable[tuple[Sensitive, GateAction]],
    conversation_id: str | None = None,
) -> list[GateNotice]:
    """One notice per category and action of what the gate did (`done`, one entry a value)."""
    counts = Counter(done)
    return [GateNotice(where, kind, action, n, conversation_id) for (kind, action), n in counts.items()]


def utcnow() -> datetime:
    return datetime.now(UTC)


# Every time mnemo stores is in UTC, within what both stores and Python hold: the years 1 to 9999.
EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def as_utc(value: datetime) -> datetime:
    """The same instant in UTC (a naive time is read as UTC). InvalidInput when that instant
    falls outside the years 1 to 9999 in UTC ("0001-01-01T00:00:00+14:00" is in the year 0)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if value.tzinfo is UTC:
        return value
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise TimeOutOfRange(f"{value.isoformat()} is outside the years 1 to 9999 once in UTC") from None


def shift(at: datetime, delta: timedelta) -> datetime:
    """`at + delta`, held within the times mnemo stores (date arithmetic never overflows)."""
    try:
        return min(max(at + delta, EARLIEST), LATEST)
    except OverflowError:
        return EARLIEST if delta < timedelta(0) else LATEST


MAX_CONVERSATION_ID = 200


def conversation_id(value: str) -> str:
    """A conversation id as a client names it (X-Mnemo-Conversation, /v1/turns): the spacing
    around it dropped, 1 to MAX_CONVERSATION_ID characters, no control characters."""
    value = value.strip()
    if not value:
        raise InvalidValue("a conversation id needs some text")
    if len(value) > MAX_CONVERSATION_ID:
        raise InvalidValue(f"a conversation id is at most {MAX_CONVERSATION_ID} characters")
    control = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        raise InvalidValue(f"a conversation id holds no control characters (it holds U+{ord(control):04X})")
    return value


def new_id() -> str:
    """A UUIDv7 string: time-ordered, never reused."""
    return str(uuid_utils.uuid7())


_SPACE = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s.!?;,]+$")


def normalise(text: str) -> str:
    """The form two restatements of one fact share: case, spacing, final punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _SPACE.sub(" ", text).strip()
    return _TRAILING_PUNCT.sub("", text)


# typographic quotes, apostrophes and dashes, read as the ASCII ones a keyboard types
_TYPOGRAPHIC = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc\u02b9\u00b4`", "'")
    | dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb\u301d\u301e", '"')
    | dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b", "-")
)


def plain(text: str) -> str:
    """The form an erased text is known by (mnemo.forgetting), so that a copy that only looks
    different is the same text: its words alone, in order, in NFKC and lower case, once the
    characters that show nothing are left out (format characters: zero-width spaces and joiners,
    the soft hyphen, the byte order mark, directional marks; and variation selectors). Quotes
    around it, punctuation, an emoji or ":)" added are no words: "“I live in Berlin” 😊" is
    "i live in berlin". A text of no word characters ("🍵") keeps its other characters,
    `normalise`d, so that it is not every such text."""
    text = unicodedata.normalize("NFKC", text.translate(_TYPOGRAPHIC))
    text = "".join(c for c in text if not _shows_nothing(c)).translate(_TYPOGRAPHIC)
    words = _WORD_RUN.findall(text.casefold())
    return " ".join(words) if words else normalise(text)


_WORD_RUN = re.compile(r"\w+")


def _shows_nothing(c: str) -> bool:
    return unicodedata.category(c) == "Cf" or "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef"


def says(text: str, words: str) -> bool:
    """Whether `text` says `words`: the same words in a row, whole (case, spacing and final
    punctuation aside, as `normalise` has them), so "tea" is not found in "steal"."""
    wanted = normalise(words)
    if not wanted:
        return False
    return re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", normalise(text)) is not None


def is_unicode(text: str) -> bool:
    """Whether `text` is Unicode that UTF-8 (and so every store, tokenizer and model) takes:
    JSON lets a lone surrogate ("\\ud800") through, which none of them does."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def as_unicode(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD: for text mnemo did not choose (a
    model's reply, an upstream's error) that it must still show, send on or store."""
    return _LONE_SURROGATE.sub("\ufffd", text)


MAX_TEXT = 2000  # characters of a fact's text, as stored

# Explicit directional formatting (embeddings, overrides, isolates): with them a text can
# display as something other than what it stores ("Trojan Source"). The marks LRM, RLM and
# ALM stay: they only place neutral characters, and right-to-left writing needs them.
_BIDI_CONTROLS = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
# control characters (Unicode's Cc) read as a space: NUL, which PostgreSQL cannot store, and the
# escape sequences that would drive the terminal a fact is printed on
_CONTROLS = {c: " " for c in [*range(0x20), *range(0x7F, 0xA0)]}


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


# A field not given in a partial change (left as it is), where None would mean "clear it" (or
# "the default assistant's"): the store's updates, the faces' filters, the HTTP client's calls
UNSET: Any = _Unset()


MAX_NAME = 100  # characters of a name: a person's, an agent's, a key's (as the API's Name)
# Characters a name may not hold beside the control ones: Unicode's invisible formatting
# characters (Cf: direction overrides, zero-width spaces, the byte-order mark, the soft hyphen)
# and its line and paragraph separators (Zl, Zp), as ranges of code points (Unicode 14, this
# Python's; tests/unit checks them against unicodedata), so the API's schema can say them too
HIDDEN_RANGES = (
    (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891),
    (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_HIDDEN = frozenset(c for low, high in HIDDEN_RANGES for c in range(low, high + 1))


def plain_name(what: str, name: str) -> str:
    """`name` (a person's, an agent's, a key's), or InvalidInput when it is blank or longer than
    MAX_NAME characters, or holds a control character, an invisible formatting one (a direction
    override, a zero-width space, a byte-order mark) or a line separator: a name is printed in
    tables, pages and terminals, where one would drive them or hide what the name says."""
    hidden = next(
        (c for c in name if ord(c) in _CONTROLS or unicodedata.category(c) in ("Cf", "Zl", "Zp")), None
    )
    if hidden is not None:
        kind = "a control character" if ord(hidden) in _CONTROLS else "an invisible character"
        raise InvalidInput(f"{what} holds {kind} (U+{ord(hidden):04X})")
    if not name.strip():
        raise InvalidInput(f"{what} is empty")
    if len(name) > MAX_NAME:
        raise InvalidInput(f"{what} is longer than {MAX_NAME} characters")
    return name


def without_controls(text: str) -> str:
    """`text` with its control characters but newlines and tabs left out (an agent's persona)."""
    return "".join(c for c in text if c in "\n\t" or ord(c) not in _CONTROLS)


def clean_text(text: str) -> str:
    """A fact's text as stored: valid Unicode, its spacing collapsed, no control character (NUL,
    which PostgreSQL cannot store, a terminal's escape) and no directional overrides."""
    if not is_unicode(text):
        raise InvalidInput("a memory must be valid Unicode (it holds a lone surrogate)")
    text = " ".join(text.translate(_CONTROLS).translate(_BIDI_CONTROLS).split())
    if not text:
        raise InvalidInput("a memory needs some text")
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"a memory is at most {MAX_TEXT} characters")
    return text


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def is_uuid(value: str) -> bool:
    """Whether `value` can be the id of a fact, an agent or a job (each is a UUID)."""
    return bool(_UUID.match(value))


def known_id(value: str, what: str) -> str:
    """An id as a path or a form names it, lower-cased. One that cannot exist answers like one
    that does not: NotFound."""
    if not is_uuid(value):
        raise NotFound(f"no {what} {value[:80]!r}")
    return value.lower()


def text_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()


class MnemoError(Exception):
    """An error mnemo reports to a person or a client, of no kind more precise.

    Each kind has a `code` that stays the same whatever the wording: the HTTP API's error body
    carries it, so do the Python client's exception and an MCP tool's error
    (docs/reference/errors.md lists them)."""

    code: ClassVar[str] = "error"


class NotFound(MnemoError):
    """No such thing in this scope (another person's id answers the same)."""

    code = "not_found"


class Conflict(MnemoError):
    """The change cannot be made as things stand (a name someone has, a state that allows it not)."""

    code = "conflict"


class VersionConflict(Conflict):
    """The fact changed since the version the caller saw: read it again, then decide."""

    code = "version_conflict"


class NameTaken(Conflict):
    """The name is someone else's: another person's, or another of the person's agents."""

    code = "name_taken"


class Duplicate(Conflict):
    """The change would leave two facts of one agent with the same text and status (active, or
    awaiting review): `existing` is the other one. Checked where writes are serialised (inside
    the store's transaction), so two identical adds at once cannot both create a fact; the
    caller reads again and reinforces instead."""

    code = "duplicate"

    def __init__(self, message: str, existing: str) -> None:
        super().__init__(message)
        self.existing = existing


class ErasedMeanwhile(Conflict):
    """The person erased the turn's conversation, or everything, while it was being answered:
    nothing of it is stored."""

    code = "erased_meanwhile"


class InvalidInput(MnemoError):
    """The request cannot be applied as given."""

    code = "invalid_input"


class InvalidValue(InvalidInput, ValueError):
    """One value that cannot be taken as given (a ValueError too, for parsers and validators)."""


class Blocked(InvalidInput):
    """The text holds what the person's sensitive-data gate keeps out (a credential, by
    default): nothing was stored, and the refusal names the category only."""

    code = "blocked_sensitive"


class TimeOutOfRange(InvalidValue):
    """A time that no store can hold."""

    code = "time_out_of_range"


class StorageFull(MnemoError):
    """The database has no room left (its disk is full): nothing of the request was stored."""

    code = "storage_full"


class NotRemembered(MnemoError):
    """The person asked that the turn's conversation not be remembered: nothing of the turn is
    stored (it is answered all the same)."""

    code = "not_remembered"


class QueueFull(MnemoError):
    """The person already has as many turns waiting to be learnt from as one may
    (`jobs.max_queued_per_user`): nothing of this turn was stored; try again after
    `retry_after` seconds, when the worker will have learnt from some of them."""

    code = "queue_full"
    retry_after = 30


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memory: a user, and an agent (None = the default assistant).

    `all_agents` is the person's own view of everything they own, private
    agents included (their settings page, export); assistants never get it.
    """

    user_id: str
    agent_id: str | None = None
    all_agents: bool = False
    # The agents whose facts this scope reads ('' = the default agent), once decided from the
    # user's agents by `visible_to` (the agent rule, `readable_agent_keys`): a recall's arms
    # then read no agents of their own. Not part of what a scope is (equality ignores it).
    readable: tuple[str, ...] | None = field(default=None, compare=False)

    def visible_to(self, agents: list[Agent]) -> Scope:
        """This scope with the agent rule decided over the user's (living) agents; NotFound when
        its agent is not one of them."""
        keys = readable_agent_keys(self, agents)
        return self if keys is None else replace(self, readable=tuple(keys))


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an imported fact was kept before: the tool (`mem0`, `khoj`, `markdown`), its id
    there (a file's name and line for a list), and what it held that a fact has no field for
    (`details`, a JSON object as canonical JSON text)."""

    tool: str
    id: str | None = None
    details: str | None = None

    def to_json(self) -> dict[str, Any]:
        details = json.loads(self.details) if self.details else None
        return {"tool": self.tool, "id": self.id, "details": details}

    @classmethod
    def of(cls, tool: str, id: str | None, details: dict[str, Any] | None) -> Origin:
        return cls(tool, id, canonical_json(details) if details else None)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Origin:
        return cls.of(str(data["tool"]), data.get("id"), data.get("details"))


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Source:
    """Where a fact came from (`origin`: an imported fact's place in the tool it came from)."""

    kind: SourceKind = SourceKind.API
    conversation_id: str | None = None
    message_ids: tuple[str, ...] = ()
    speaker: str | None = None
    extractor_model: str | None = None
    prompt_version: str | None = None
    origin: Origin | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": str(self.kind),
            "conversation_id": self.conversation_id,
            "message_ids": list(self.message_ids),
            "speaker": self.speaker,
            "extractor_model": self.extractor_model,
            "prompt_version": self.prompt_version,
        }
        if self.origin is not None:  # only imported facts have one: every other source reads as before
            out["origin"] = self.origin.to_json()
        return out

    def scrubbed(self) -> Source:
        """Without where it came from: no conversation id, message ids or place in another tool
        (what an erasure of everything leaves: its kind, who said it, which model)."""
        return replace(self, conversation_id=None, message_ids=(), origin=None)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Source:
        data = data or {}
        return cls(
            kind=SourceKind(data.get("kind", SourceKind.API)),
            conversation_id=data.get("conversation_id"),
            message_ids=tuple(data.get("message_ids") or ()),
            speaker=data.get("speaker"),
            extractor_model=data.get("extractor_model"),
            prompt_version=data.get("prompt_version"),
            origin=Origin.from_json(data["origin"]) if data.get("origin") else None,
        )


@dataclass(frozen=True, slots=True)
class Fact:
    id: str
    user_id: str
    agent_id: str | None
    text: str
    category: Category
    status: Status
    confidence: float
    created_at: datetime
    recorded_at: datetime | None
    source: Source
    version: int = 1
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    retired_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    embedding_model: str | None = None
    pinned: bool = False
    mentions: int = 1
    last_seen_at: datetime | None = None
    purged: bool = False

    def __post_init__(self) -> None:
        # one representation for every time a fact holds, whichever path made it
        for name in _FACT_TIMES:
            value = getattr(self, name)
            if value is not None and value.tzinfo is not UTC:
                object.__setattr__(self, name, as_utc(value))

    @property
    def text_hash(self) -> str:
        return text_hash(self.text)

    def evolve(self, **changes: Any) -> Fact:
        return replace(self, **changes)

    def ended(self, now: datetime) -> bool:
        """Active, and past the end it was given: no longer recalled as true now."""
        return self.status == Status.ACTIVE and self.valid_to is not None and self.valid_to <= now

    def is_valid_at(self, at: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= at) and (
            self.valid_to is None or self.valid_to > at
        )

    def snapshot(self) -> dict[str, Any]:
        """The fact as recorded in an event: everything but the vector."""
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "text": self.text,
            "category": str(self.category),
            "status": str(self.status),
            "confidence": self.confidence,
            "created_at": _iso(self.created_at),
            "recorded_at": _iso(self.recorded_at),
            "valid_from": _iso(self.valid_from),
            "valid_to": _iso(self.valid_to),
            "retired_at": _iso(self.retired_at),
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "version": self.version,
            "source": self.source.to_json(),
            "embedding_model": self.embedding_model,
            "pinned": self.pinned,
            "mentions": self.mentions,
            "last_seen_at": _iso(self.last_seen_at),
            "purged": self.purged,
        }

    @classmethod
    def from_snapshot(cls, user_id: str, data: dict[str, Any]) -> Fact:
        return cls(
            id=data["id"],
            user_id=user_id,
            agent_id=data.get("agent_id"),
            text=data.get("text") or "",
            category=Category(data["category"]),
            status=Status(data["status"]),
            confidence=float(data["confidence"]),
            created_at=parse_time(data["created_at"]),
            recorded_at=parse_time(data.get("recorded_at")),
            valid_from=parse_time(data.get("valid_from")),
            valid_to=parse_time(data.get("valid_to")),
            retired_at=parse_time(data.get("retired_at")),
            supersedes=data.get("supersedes"),
            superseded_by=data.get("superseded_by"),
            version=int(data["version"]),
            source=Source.from_json(data.get("source")),
            embedding_model=data.get("embedding_model"),
            pinned=bool(data.get("pinned")),
            mentions=int(data.get("mentions", 1)),
            last_seen_at=parse_time(data.get("last_seen_at")),
            purged=bool(data.get("purged")),
        )


_FACT_TIMES = ("created_at", "recorded_at", "valid_from", "valid_to", "retired_at", "last_seen_at")


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the append-only audit log."""

    seq: int
    at: datetime
    user_id: str
    fact_id: str
    action: Action
    actor: str
    reason: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    digest: str
    prev_hash: str
    hash: str
    redacted: bool = False
    salt: str | None = None  # random, per event; erased by a purge (see mnemo.audit)
    redacted_for: str | None = None  # the purged fact this event's reason told of (erased with it)


@dataclass(frozen=True, slots=True)
class Agent:
    id: str
    user_id: str
    name: str
    private: bool = False
    reads_default: bool = False
    persona: str | None = None
    upstream_model: str | None = None


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A user's API key; the secret itself is shown once and stored only as a hash."""

    id: str
    user_id: str
    name: str
    secret_hash: str
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None  # to the hour (Accounts.authenticate): when it last worked


class JobStatus(StrEnum):
    PENDING = "pending"
    CLAIMED = "claimed"
    DONE = "done"
    FAILED = "failed"
    WAITING = "waiting"  # learnt only explicit requests: learnt again once a chat model is configured
    SKIPPED = "skipped"  # never learnt from (see SkipReason)
    OVER_BUDGET = "over_budget"  # its person's tokens of the day are spent: due next UTC midnight

    @staticmethod
    def finished(result: dict[str, Any]) -> JobStatus:
        """The status a job ends with, by what its learning recorded."""
        if result.get("skipped"):
            return JobStatus.SKIPPED
        return JobStatus.WAITING if result.get("waiting_for_model") else JobStatus.DONE


class TurnState(StrEnum):
    """A stored turn as its person reads it: one state per status of its job."""

    QUEUED = "queued"
    LEARNING = "learning"
    LEARNT = "learnt"
    WAITING_FOR_MODEL = "waiting_for_model"
    FAILED = "failed"
    SKIPPED = "skipped"
    OVER_BUDGET = "over_budget"

    @property
    def status(self) -> JobStatus:
        return next(s for s, state in _STATE_OF.items() if state == self)


_STATE_OF = {
    JobStatus.PENDING: TurnState.QUEUED,
    JobStatus.CLAIMED: TurnState.LEARNING,
    JobStatus.DONE: TurnState.LEARNT,
    JobStatus.WAITING: TurnState.WAITING_FOR_MODEL,
    JobStatus.FAILED: TurnState.FAILED,
    JobStatus.SKIPPED: TurnState.SKIPPED,
    JobStatus.OVER_BUDGET: TurnState.OVER_BUDGET,
}


class FailReason(StrEnum):
    """Why learning from a turn failed, as a category: never the model's or the person's words."""

    MODEL_UNREACHABLE = "model_unreachable"
    INVALID_REPLY = "invalid_reply"
    TIMEOUT = "timeout"
    REFUSED_BY_POLICY = "refused_by_policy"
    INTERNAL = "internal"  # a bug


class SkipReason(StrEnum):
    AUTOMATION = "automation"
    MEMORY_OFF = "memory_off"
    AGENT_DELETED = "agent_deleted"


# what a turn did to memory, each kind as fact ids (a superseded fact is the one replaced)
FACT_KINDS = ("created", "updated", "superseded", "reinforced", "retracted", "held")
_KIND_OF = {
    Action.CREATE: "created",
    Action.EDIT: "updated",
    Action.SUPERSEDE: "superseded",
    Action.REINFORCE: "reinforced",
    Action.RETRACT: "retracted",
}


def learnt_facts(
    changes: Sequence[Change], earlier: dict[str, list[str]] | None = None
) -> dict[str, list[str]]:
    """The fact ids a turn's changes touched, by kind, after those of an `earlier` pass."""
    out = {kind: list((earlier or {}).get(kind, ())) for kind in FACT_KINDS}
    for change in changes:
        if change.action == Action.CREATE and change.fact.status == Status.CANDIDATE:
            out["held"].append(change.fact.id)
        elif (kind := _KIND_OF.get(change.action)) is not None:
            out[kind].append(change.fact.id)
    return out


@dataclass(frozen=True, slots=True)
class Job:
    """A stored turn waiting to be learnt from (or learnt from)."""

    id: str
    user_id: str
    agent_id: str | None
    conversation_id: str
    message_ids: tuple[str, ...]
    automation: bool
    turn_at: datetime
    status: JobStatus
    attempts: int
    next_attempt_at: datetime
    created_at: datetime
    lease_until: datetime | None = None
    claimed_by: str | None = None
    last_error: str | None = None
    result: dict[str, Any] | None = None
    finished_at: datetime | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.user_id, self.agent_id)


def dropped_words(dropped: Mapping[str, int], *, total: bool = True) -> str:
    """What a turn dropped, as its log line, `mnemo turns show` and Activity say it:
    "2: no text (1), not an object (1)" (`total`: with the count first); the reasons quote
    nothing of what was said."""
    why = ", ".join(f"{reason} ({n})" for reason, n in sorted(dropped.items()))
    return f"{sum(dropped.values())}: {why}" if total else why


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """A stored turn as its person reads it: its state, why (a category), and what it learnt."""

    id: str
    agent_id: str | None
    conversation_id: str
    message_ids: tuple[str, ...]
    state: TurnState
    reason: str | None  # a FailReason (failed, or queued again after one), or a SkipReason
    facts: dict[str, list[str]]  # FACT_KINDS → fact ids (learnt, waiting_for_model)
    attempts: int
    created_at: datetime
    finished_at: datetime | None
    learn_at: datetime | None = None  # over budget: when it will be learnt (the next UTC midnight)
    # what the model proposed that was not kept, by why (words that quote none of it): how many
    dropped: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, job: Job) -> StoredTurn:
        result = job.result or {}
        recorded = result.get("facts") or {}
        return cls(
            id=job.id,
            agent_id=job.agent_id,
            conversation_id=job.conversation_id,
            message_ids=job.message_ids,
            state=_STATE_OF[job.status],
            reason=result.get("skip_reason") or result.get("reason"),
            facts={kind: list(recorded.get(kind, ())) for kind in FACT_KINDS},
            attempts=job.attempts,
            created_at=job.created_at,
            finished_at=job.finished_at,
            learn_at=job.next_attempt_at if job.status == JobStatus.OVER_BUDGET else None,
            dropped={str(why): int(n) for why, n in (result.get("dropped") or {}).items()},
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """Proof that a worker holds a job: finishing it needs the same claimant."""

    job_id: str
    worker: str


@dataclass(frozen=True, slots=True)
class User:
    id: str
    name: str
    memory_enabled: bool | None = None
    review_policy: ReviewPolicy = ReviewPolicy.AUTO
    created_at: datetime | None = None  # as stored (None where it was not read)
    record_recalls: bool = True  # the person's switch: which assistant recalled what, and when
    gate: GatePolicy = GatePolicy()  # the sensitive-data gate's action for each category
    review_stale: bool = True  # the person's switch: the "Still true?" list (mnemo.stale)
    disabled_at: datetime | None = None  # the administrator disabled the account then: keys refused


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str
    id: str | None = None
    at: datetime | None = None  # when it was said (as stored; None where a read leaves it out)
    erased_at: datetime | None = None  # its text was erased then (the content is empty)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A stored conversation and its messages, oldest first (export, import, backfill)."""

    id: str
    user_id: str
    agent_id: str | None
    created_at: datetime
    messages: tuple[Message, ...] = ()
    marks: tuple[BackfillMark, ...] = ()  # the turns backfill has learnt from (export, import)
    remember: bool = True  # the person's switch (ConversationSummary.remember)


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A stored conversation as its list shows it."""

    id: str
    agent_id: str | None
    created_at: datetime
    messages: int
    last_at: datetime | None  # when its last message was said (None: it has none)
    opening: str | None  # the start of its first user message not erased, as stored (masked)
    remember: bool = True  # the person's switch: off, its later turns are neither stored nor learnt


@dataclass(frozen=True, slots=True)
class ConversationView:
    """One conversation as its page shows it: every message, its turns (newest first) and the
    memories they taught."""

    summary: ConversationSummary
    messages: tuple[Message, ...]
    turns: tuple[StoredTurn, ...]
    memories: tuple[Fact, ...]


@dataclass(frozen=True, slots=True)
class Turn:
    """A finished exchange handed to the writer."""

    scope: Scope
    messages: tuple[Message, ...]
    conversation_id: str | None = None
    automation: bool = False
    at: datetime | None = None
    id: str | None = None  # the id to store it under (its job's), chosen ahead: the proxy's reply names it
    # when its request began: an erasure of its conversation, or of everything, since then keeps
    # it from being stored (ErasedMeanwhile); None: no such check
    began: datetime | None = None

    @classmethod
    def of(cls, scope: Scope, *pairs: tuple[str, str], **kwargs: Any) -> Turn:
        return cls(scope, tuple(Message(role, content) for role, content in pairs), **kwargs)


@dataclass(frozen=True, slots=True)
class ConversationRef:
    """A stored conversation, as backfill lists them: whose, which agent's, and when its
    first message (of the window asked for) was said."""

    id: str
    user_id: str
    agent_id: str | None
    first_at: datetime


@dataclass(frozen=True, slots=True)
class BackfillMark:
    """Backfill learnt from one turn of a conversation (named by the user message that opens
    it), in that run.

    Written in the same transaction as the turn's facts (Store.commit's `mark`), so a
    turn is learnt from and marked, or neither. `replaces` is the run id of the turn's
    mark as it was read (None: it had none); the store refuses (Conflict) a mark that
    changed since, so two runs at once cannot both learn a turn.
    """

    conversation_id: str
    turn_id: str
    run_id: str
    said_at: datetime
    processed_at: datetime | None = None
    replaces: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """One fact write and the event that records it, applied by Store.commit."""

    fact: Fact
    action: Action
    actor: str
    before: Fact | None = None
    reason: str | None = None
    vector: Any = None  # a float32 numpy vector when the text changed
    redact: bool = False  # purge: erase the text of this fact's past events

    def __post_init__(self) -> None:
        # a reason is free text from a person or a model: PostgreSQL cannot store U+0000 in it
        if self.reason is not None and "\x00" in self.reason:
            object.__setattr__(self, "reason", self.reason.replace("\x00", "\ufffd"))


@dataclass(frozen=True, slots=True)
class Erasure:
    """What an erasure takes beside the texts of its facts (those are its commit's purges):
    messages whose text is erased (a marker of when stays), whole conversations (their
    messages, jobs and backfill marks), and the keyed hashes of the erased texts, which
    learning, backfill and import check so that nothing erased is learnt again. `seal` makes
    the signed receipt from the chain's head after the commit and what the commit counted."""

    messages: tuple[str, ...] = ()
    conversations: tuple[str, ...] = ()
    forget: tuple[str, ...] = ()
    seal: Callable[[str, dict[str, int]], Receipt] | None = None
    keys: bool = False  # every API key of the user goes too, but `keep_key`
    keep_key: str | None = None
    # the erased texts themselves, only to find within the transaction what still quotes them
    # (a job's problems, its last error); never stored
    texts: tuple[str, ...] = ()


class RecallVia(StrEnum):
    """The face an assistant recalled through."""

    PROXY = "proxy"  # the chat proxy
    API = "api"  # POST /v1/memories/search
    MCP = "mcp"  # the MCP recall tool
    WEB = "web"  # the page's Try it


@dataclass(frozen=True, slots=True)
class RecallRecord:
    """That an assistant (`agent_id`, None: the default one) was given a fact at `at`."""

    fact_id: str
    agent_id: str | None
    at: datetime
    via: RecallVia


@dataclass(frozen=True, slots=True)
class RecallSummary:
    """How a fact was recalled lately: the last time and by whom, and how often since `since`."""

    last: RecallRecord | None
    count: int
    since: datetime


@dataclass(frozen=True, slots=True)
class LearntFrom:
    """What a learnt batch rests on: the keyed hashes (mnemo.forgetting) of its facts' texts,
    and the messages they cite. The commit refuses the batch (Conflict) when the person erased
    either while it was being learnt, checking under the user's lock."""

    texts: tuple[str, ...] = ()
    messages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Receipt:
    """The signed record of one erasure: what went (ids, counts, kinds, times), never a text."""

    id: str
    user_id: str
    at: datetime
    kind: str
    body: dict[str, Any]  # what was erased, the chain head after it, the key that signed it
    signature: str


@dataclass(frozen=True, slots=True)
class AuditReport:
    ok: bool
    events: int
    problems: list[str] = field(default_factory=list)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@overload
def parse_time(value: datetime) -> datetime: ...
@overload
def parse_time(value: str | datetime | None) -> datetime | None: ...
def parse_time(value: str | datetime | None) -> datetime | None:
    """A time as stored or sent (ISO 8601; naive means UTC); None for None or ''."""
    if value is None or value == "":
        return None
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def find_agent(agents: list[Agent], id_or_name: str) -> Agent | None:
    """One of these agents by id, else by name (an id wins over a name that looks like one)."""
    return next((a for a in agents if a.id == id_or_name), None) or next(
        (a for a in agents if a.name == id_or_name), None
    )


def readable_agent_keys(scope: Scope, agents: list[Agent]) -> list[str] | None:
    """The agent rule: which agents' facts a scope may read ('' = the default agent).

    None means every agent of the user (the person's own view). The default
    agent reads its own facts and those of every agent not marked private; a
    custom agent reads its own, plus the default agent's if it opts in. Other
    users never come into it: the user id is always matched first.
    """
    if scope.all_agents:
        return None
    if scope.readable is not None:
        return list(scope.readable)
    if scope.agent_id is None:
        return [""] + [a.id for a in agents if not a.private]
    own = next((a for a in agents if a.id == scope.agent_id), None)
    if own is None:
        raise NotFound(f"no agent {scope.agent_id}")
    return [own.id, ""] if own.reads_default else [own.id]


# -- tokens spent by the chat model on learning --------------------------------------------

MAX_TOKEN_BUDGET = 10**12  # a daily budget above this is a typo, not a budget


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens the chat model reported for some calls; `unreported`: calls whose reply had no
    usage (their tokens are unknown, counted in neither total nor budget)."""

    prompt: int = 0
    completion: int = 0
    calls: int = 0
    unreported: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.calls + other.calls,
            self.unreported + other.unreported,
        )

    def summary(self) -> dict[str, int]:
        """As a job's result records it."""
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "total": self.total,
            "calls": self.calls,
            "unreported_calls": self.unreported,
        }


@dataclass(frozen=True, slots=True)
class DayUsage:
    day: date  # a UTC day
    usage: TokenUsage


def utc_day(at: datetime) -> date:
    return at.astimezone(UTC).date()


def next_utc_midnight(at: datetime) -> datetime:
    """The start of the UTC day after `at`'s."""
    return datetime.combine(utc_day(at) + timedelta(days=1), time(), tzinfo=UTC)


def tokens_left(budget: int | None, used: TokenUsage) -> int | None:
    """What is left of a daily budget (None: unlimited); never below zero."""
    return None if budget is None else max(0, budget - used.total)
