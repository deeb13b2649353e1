"""Pieces of the JSON shapes that the faces share (the HTTP API's schemas, the MCP tools'):
texts within the domain's limits, ids, times, integers as JSON Schema has them, and why a
fact was recalled. Each documents in its JSON Schema what it checks."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, StringConstraints

from .domain import (
    HIDDEN_RANGES,
    MAX_CONVERSATION_ID,
    MAX_NAME,
    MAX_TEXT,
    InvalidInput,
    as_utc,
    conversation_id,
    is_uuid,
    plain_name,
)

if TYPE_CHECKING:
    from .recall.fuse import Hit


def _uuid(value: str) -> str:
    if not is_uuid(value):
        raise ValueError("must be an id such as 0190c8e2-7b1d-7c3e-9a4f-2b6d8e1f0a3c (a UUID)")
    return value.lower()


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# The first and last days of the calendar are left out whatever the offset: in UTC, a time on
# them may fall outside the years 1 to 9999, and a schema (a pattern) cannot say which do.
_EDGE_DAYS = ("0001-01-01", "9999-12-31")


def _written_time(value: object) -> object:
    """A date-time is written as an ISO 8601 string: a number, in a body or a query string,
    is no date (nor a Unix time)."""
    if isinstance(value, str) and value.startswith(_EDGE_DAYS):
        raise ValueError("must be a date from 0001-01-02 to 9999-12-30")
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_DATE.match(value)):
        return value
    raise ValueError("must be an ISO 8601 date-time, such as 2026-03-01T09:00:00Z")


def _utc(value: datetime) -> datetime:
    """In UTC (a date-time without a zone is read as UTC); checked after the conversion as well,
    as every path is."""
    return as_utc(value)


def _json_integer(value: object) -> object:
    """What JSON Schema calls an integer: a number with no fraction (3 or 3.0), never true
    or "3", which pydantic's lax mode would take and its strict mode refuses all but 3 of."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be an integer")
        return int(value)
    return value


def _no_nul(value: str) -> str:
    # PostgreSQL cannot store U+0000 in text; refusing it on both backends keeps them alike
    if "\x00" in value:
        raise ValueError("must not contain the character U+0000")
    return value


def _no_control(value: str) -> str:
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        raise ValueError("must not contain a control character")
    return value


def _plain_name(value: str) -> str:
    try:
        return plain_name("a name", value)
    except InvalidInput as exc:
        raise ValueError(str(exc).removeprefix("a name ")) from None


def _stripped(value: str) -> str:
    """Spacing around a text is not part of it; a text of spacing alone is no text."""
    value = value.strip()
    if not value:
        raise ValueError("must hold some text besides spaces")
    return value


# what str.strip() takes away: every character Python counts as white space, as a JSON
# Schema (ECMA-262) character class, so that the documented pattern and the check agree
_BLANK = "".join(f"\\u{c:04x}" for c in range(0x10000) if chr(c).isspace())
_NO_NUL = "^[^\\x00]*$"
_SOME_TEXT = f"[^\\x00{_BLANK}]"  # some character besides white space and U+0000
_NOT_BLANK = f"^[^\\x00]*[^\\x00{_BLANK}][^\\x00]*$"  # that, and no U+0000 anywhere
NoNul = (AfterValidator(_no_nul), Field(json_schema_extra={"pattern": _NO_NUL}))
_CONTROL = "\\x00-\\x1f\\x7f-\\x9f"  # Unicode's control characters (Cc)
# what domain.conversation_id takes: some character besides spacing, none of them a control one
ConversationId = Annotated[
    str,
    StringConstraints(max_length=MAX_CONVERSATION_ID),
    AfterValidator(conversation_id),
    Field(json_schema_extra={"pattern": f"^[^{_CONTROL}]*[^{_CONTROL}{_BLANK}][^{_CONTROL}]*$"}),
]


def stripped_text(max_length: int, *, nul: bool = False) -> Any:
    """A text of at most `max_length` characters as sent (the limit the schema documents),
    stored without its surrounding spacing; U+0000 refused unless `nul` (fact text: the writer
    turns it into a space)."""
    return Annotated[
        str,
        StringConstraints(max_length=max_length),
        *(() if nul else (AfterValidator(_no_nul),)),
        AfterValidator(_stripped),
        Field(json_schema_extra={"pattern": _SOME_TEXT if nul else _NOT_BLANK}),
    ]


# documented as a uuid, so that a client (or a fuzzer) knows which strings can name one
Id = Annotated[str, AfterValidator(_uuid), Field(json_schema_extra={"format": "uuid"})]
UtcTime = Annotated[
    datetime,
    BeforeValidator(_written_time),
    AfterValidator(_utc),
    # from 0001-01-02 to 9999-12-30 (see _EDGE_DAYS), whatever the offset
    Field(json_schema_extra={"pattern": "^(?!0000-|0001-01-01|9999-12-31)[0-9]{4}-"}),
]


def json_int(*, ge: int | None = None, le: int | None = None) -> Any:
    """An integer as JSON Schema has one, within the bounds given. The bounds go before the
    validator, so that the schema documents them as minimum and maximum."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_json_integer)]


FactText = stripped_text(MAX_TEXT, nul=True)
QueryText = stripped_text(4000, nul=True)  # a search's words (U+0000 is no word: dropped)
# a person's, an agent's, a key's name: some text; no control, invisible formatting or line
# separating character (domain.plain_name, which the pattern says too)
_HIDDEN = "".join(
    f"\\u{low:04x}-\\u{high:04x}" if high < 0x10000 else f"{chr(low)}-{chr(high)}"
    for low, high in HIDDEN_RANGES
)
_NOT_IN_NAME = f"{_CONTROL}{_HIDDEN}"
Name = Annotated[
    str,
    StringConstraints(max_length=MAX_NAME),
    AfterValidator(_no_nul),
    AfterValidator(_stripped),
    AfterValidator(_plain_name),
    Field(json_schema_extra={"pattern": f"^[^{_NOT_IN_NAME}]*[^{_NOT_IN_NAME}{_BLANK}][^{_NOT_IN_NAME}]*$"}),
]
LongText = Annotated[str, StringConstraints(max_length=4000), *NoNul]
FactVersion = json_int(ge=1)
SearchLimit = json_int(ge=1, le=100)  # how many results a search returns


class ArmPublic(BaseModel):
    rank: int
    score: float


def reasons_of(hit: Hit) -> dict[str, ArmPublic]:
    """Why a fact was recalled: per recall arm, the rank and score it gave."""
    return {arm: ArmPublic(rank=r.rank, score=r.score) for arm, r in hit.reasons.items()}
