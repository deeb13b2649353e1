"""What every request and answer of the API shares: strictness and pages. The field types
(ids, times, text limits) are in mnemo.shapes, which the MCP tools share."""

from __future__ import annotations

from typing import Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Where the next page starts; null on the last page.")

    @classmethod
    def of(cls, rows: list[T], limit: int, offset: int) -> Self:
        """From up to limit + 1 rows: the extra row only says that there is a next page."""
        more = len(rows) > limit
        return cls(
            items=rows[:limit], limit=limit, offset=offset, next_offset=offset + limit if more else None
        )
