"""Each request of the API, written once: its method, path, query, body and the shape of its
answer (the server's own models, mnemo.schemas). Client and AsyncClient send them.

Requests are not checked here: the server checks them, and its 422 names the field (Invalid).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from ..domain import UNSET  # not given: left out of the request (None would mean null)
from ..schemas import (
    AgentDeleted,
    AgentPublic,
    ConversationPublic,
    ConversationSummaryPublic,
    EventPublic,
    FactPublic,
    KeyCreated,
    KeyPublic,
    MePublic,
    Page,
    SearchResults,
    StaleList,
    TurnPublic,
    TurnResult,
    UsagePublic,
)
from ..schemas.erasures import ErasurePlanPublic, ReceiptPublic

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    answer: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    body: Any = UNSET

    def json(self) -> Any:
        return None if self.body is UNSET else self.body


def _id(value: str) -> str:
    """An id as one path segment, whatever it holds (a '/' or '..' cannot reach another path)."""
    return quote(str(value), safe="")


def _fields(**given: Any) -> dict[str, Any]:
    """The JSON of the fields given (UNSET ones left out)."""
    return {k: to_jsonable_python(v) for k, v in given.items() if v is not UNSET}


def _query(**given: Any) -> dict[str, Any]:
    """Query parameters; None ones left out."""
    return {k: to_jsonable_python(v) for k, v in given.items() if v is not None}


def _one(model: type[M]) -> Callable[[Any], M]:
    return model.model_validate


def _many(model: type[M]) -> Callable[[Any], list[M]]:
    return TypeAdapter(list[model]).validate_python  # type: ignore[valid-type]


# -- memories -------------------------------------------------------------------


def add(
    text: str,
    *,
    category: str = UNSET,
    pinned: bool = UNSET,
    valid_from: datetime | None = UNSET,
    agent_id: str | None = UNSET,
) -> Call[FactPublic]:
    """Remember `text` as the person wrote it. Restating an active memory reinforces that one
    (the same id, a higher version) rather than adding a second: adding twice is safe."""
    body = _fields(text=text, category=category, pinned=pinned, valid_from=valid_from, agent_id=agent_id)
    return Call("POST", "/v1/memories", _one(FactPublic), body=body)


def get(memory_id: str) -> Call[FactPublic]:
    return Call("GET", f"/v1/memories/{_id(memory_id)}", _one(FactPublic))


def memories(
    *,
    status: str | Sequence[str] | None = None,
    q: str | None = None,
    agent_id: str | None = None,
    as_of: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Call[Page[FactPublic]]:
    """One page of memories, newest first: active ones, or those of `status` (one, several, or
    "all"); `q`: only those matching the text; `as_of`: as they were believed then."""
    statuses = [status] if isinstance(status, str) else status
    params = _query(status=statuses, q=q, agent_id=agent_id, as_of=as_of, limit=limit, offset=offset)
    return Call("GET", "/v1/memories", _one(Page[FactPublic]), params=params)


def update(
    memory_id: str, *, version: int, text: str = UNSET, category: str = UNSET, pinned: bool = UNSET
) -> Call[FactPublic]:
    """Correct a memory in place; `version` is the one you saw (Conflict if it changed since)."""
    body = _fields(version=version, text=text, category=category, pinned=pinned)
    return Call("PATCH", f"/v1/memories/{_id(memory_id)}", _one(FactPublic), body=body)


def retract(memory_id: str, *, version: int | None = None) -> Call[FactPublic]:
    """Retract: it stays as a tombstone that `restore` brings back."""
    params = _query(version=version)
    return Call("DELETE", f"/v1/memories/{_id(memory_id)}", _one(FactPublic), params=params)


def restore(memory_id: str) -> Call[FactPublic]:
    return Call("POST", f"/v1/memories/{_id(memory_id)}/restore", _one(FactPublic))


def history(memory_id: str) -> Call[list[EventPublic]]:
    """Every change to the memory, oldest first."""
    return Call("GET", f"/v1/memories/{_id(memory_id)}/history", _many(EventPublic))


def search(
    query: str, *, agent_id: str | None = UNSET, limit: int | None = UNSET, as_of: datetime | None = UNSET
) -> Call[SearchResults]:
    """What an assistant would recall for `query`, best first, each hit with its `reasons`."""
    body = _fields(query=query, agent_id=agent_id, limit=limit, as_of=as_of)
    return Call("POST", "/v1/memories/search", _one(SearchResults), body=body)


# -- erasures -------------------------------------------------------------------


def erase(**request: Any) -> Call[ReceiptPublic]:
    """Erase for good, with the signed receipt: `memory_id=…` (and `message_ids=[…]` of offered
    messages, `keep_message_ids=[…]`, `with_other_agents=True`); `conversation_id=…` (and
    `with_memories=True`); `memory_ids=[…]`, `message_ids=[…]`; or `everything=True,
    confirm="erase everything"`."""
    return Call("POST", "/v1/erasures", _one(ReceiptPublic), body=_fields(**request))


def preview_erasure(**request: Any) -> Call[ErasurePlanPublic]:
    """What `erase` with the same arguments would take; nothing is erased."""
    return Call("POST", "/v1/erasures/preview", _one(ErasurePlanPublic), body=_fields(**request))


def receipts(*, limit: int = 50, offset: int = 0) -> Call[Page[ReceiptPublic]]:
    params = _query(limit=limit, offset=offset)
    return Call("GET", "/v1/erasures", _one(Page[ReceiptPublic]), params=params)


def receipt(receipt_id: str) -> Call[ReceiptPublic]:
    return Call("GET", f"/v1/erasures/{_id(receipt_id)}", _one(ReceiptPublic))


# -- review ---------------------------------------------------------------------


def review(*, agent_id: str | None = None, limit: int = 50, offset: int = 0) -> Call[Page[FactPublic]]:
    """Candidates awaiting the person's decision, newest first."""
    params = _query(agent_id=agent_id, limit=limit, offset=offset)
    return Call("GET", "/v1/review", _one(Page[FactPublic]), params=params)


def approve(memory_id: str) -> Call[FactPublic]:
    return Call("POST", f"/v1/review/{_id(memory_id)}/approve", _one(FactPublic))


def reject(memory_id: str, *, reason: str | None = UNSET) -> Call[FactPublic]:
    body = _fields(reason=reason)
    return Call("POST", f"/v1/review/{_id(memory_id)}/reject", _one(FactPublic), body=body or UNSET)


def stale(*, limit: int = 50) -> Call[StaleList]:
    """Still true? Active memories unheard for their category's time, the longest first."""
    return Call("GET", "/v1/memories/stale", _one(StaleList), params=_query(limit=limit))


def keep(memory_id: str) -> Call[FactPublic]:
    """The memory is still true: its clock starts again, and it leaves the stale list."""
    return Call("POST", f"/v1/memories/{_id(memory_id)}/keep", _one(FactPublic))


# -- conversations ----------------------------------------------------------------


def conversations(
    *,
    q: str | None = None,
    agent_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Call[Page[ConversationSummaryPublic]]:
    """Your conversations, newest first (`q`: their words; `agent_id`: an id or "default")."""
    params = _query(q=q, agent_id=agent_id, since=since, until=until, limit=limit, offset=offset)
    return Call("GET", "/v1/conversations", _one(Page[ConversationSummaryPublic]), params=params)


def conversation(conversation_id: str) -> Call[ConversationPublic]:
    """One conversation: its messages, its turns and the memories they taught."""
    dots = conversation_id.replace(".", "%2E") if set(conversation_id) == {"."} else _id(conversation_id)
    return Call("GET", f"/v1/conversations/{dots}", _one(ConversationPublic))


# -- turns ----------------------------------------------------------------------


def submit_turn(
    messages: Sequence[Mapping[str, str]],
    *,
    conversation_id: str | None = UNSET,
    agent_id: str | None = UNSET,
    automation: bool = UNSET,
) -> Call[TurnResult]:
    """Hand over a finished turn (`[{"role": …, "content": …}, …]`) to learn from; it is
    stored and queued (`queued`, with the job), or not when memory is off or it is automation."""
    body = _fields(
        messages=list(messages), conversation_id=conversation_id, agent_id=agent_id, automation=automation
    )
    return Call("POST", "/v1/turns", _one(TurnResult), body=body)


def turns(*, state: str | None = None, limit: int = 50, offset: int = 0) -> Call[Page[TurnPublic]]:
    params = _query(state=state, limit=limit, offset=offset)
    return Call("GET", "/v1/turns", _one(Page[TurnPublic]), params=params)


def turn(turn_id: str) -> Call[TurnPublic]:
    """One stored turn: its state, and the ids of the memories it created, updated, …"""
    return Call("GET", f"/v1/turns/{_id(turn_id)}", _one(TurnPublic))


# -- agents ---------------------------------------------------------------------


def agents() -> Call[list[AgentPublic]]:
    return Call("GET", "/v1/agents", _many(AgentPublic))


def create_agent(
    name: str,
    *,
    private: bool = UNSET,
    reads_default: bool = UNSET,
    persona: str | None = UNSET,
    upstream_model: str | None = UNSET,
) -> Call[AgentPublic]:
    body = _fields(
        name=name,
        private=private,
        reads_default=reads_default,
        persona=persona,
        upstream_model=upstream_model,
    )
    return Call("POST", "/v1/agents", _one(AgentPublic), body=body)


def update_agent(
    agent_id: str,
    *,
    name: str = UNSET,
    private: bool = UNSET,
    reads_default: bool = UNSET,
    persona: str | None = UNSET,
    upstream_model: str | None = UNSET,
) -> Call[AgentPublic]:
    """Change the fields given; None clears persona or upstream_model."""
    body = _fields(
        name=name,
        private=private,
        reads_default=reads_default,
        persona=persona,
        upstream_model=upstream_model,
    )
    return Call("PATCH", f"/v1/agents/{_id(agent_id)}", _one(AgentPublic), body=body)


def delete_agent(agent_id: str) -> Call[AgentDeleted]:
    """Delete an agent; its active memories are retracted."""
    return Call("DELETE", f"/v1/agents/{_id(agent_id)}", _one(AgentDeleted))


# -- the person: settings, keys, usage -----------------------------------------


def me() -> Call[MePublic]:
    """Whether memory is on, and why; the review policy; the sensitive-data gate."""
    return Call("GET", "/v1/me", _one(MePublic))


def update_settings(
    *,
    memory_enabled: bool | None = UNSET,
    review_policy: str = UNSET,
    record_recalls: bool = UNSET,
    review_stale: bool = UNSET,
    sensitive_gate: Mapping[str, str] = UNSET,
) -> Call[MePublic]:
    """Change what is given: the memory switch (None follows the server mode), the review
    policy, the recall log, the "Still true?" list, the gate's action for some categories
    (`{"phone": "mask"}`)."""
    body = _fields(
        memory_enabled=memory_enabled,
        review_policy=review_policy,
        record_recalls=record_recalls,
        review_stale=review_stale,
        sensitive_gate=sensitive_gate,
    )
    return Call("PATCH", "/v1/me/settings", _one(MePublic), body=body)


def keys() -> Call[list[KeyPublic]]:
    return Call("GET", "/v1/me/keys", _many(KeyPublic))


def create_key(name: str = UNSET) -> Call[KeyCreated]:
    """A new API key; its `token` is in this answer only."""
    return Call("POST", "/v1/me/keys", _one(KeyCreated), body=_fields(name=name))


def revoke_key(key_id: str) -> Call[KeyPublic]:
    return Call("DELETE", f"/v1/me/keys/{_id(key_id)}", _one(KeyPublic))


def usage() -> Call[UsagePublic]:
    """The chat model's tokens spent learning, today and the last 30 days, and the budget."""
    return Call("GET", "/v1/me/usage", _one(UsagePublic))
