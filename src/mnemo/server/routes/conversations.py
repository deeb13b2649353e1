"""Conversations: what the person said, found by words, assistant and date, and each one read
whole with what its turns taught (erasing one is POST /v1/erasures)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ...auth import CurrentUser
from ...domain import UNSET
from ...http.responses import errors
from ...schemas import ConversationPublic, ConversationSummaryPublic, ConversationUpdate, Page
from ...shapes import ConversationId, UtcTime
from ..deps import AccountsDep, MemoryDep
from ..params import Limit, Offset, assistant_scope

router = APIRouter(prefix="/v1/conversations", tags=["conversations"], responses=errors(404))

Words = Annotated[
    str | None,
    Query(
        min_length=1, max_length=2000, description="Only conversations with a message that says these words."
    ),
]
AgentChoice = Annotated[
    str | None,
    Query(
        pattern=r"^(default|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$",
        description='Only those had with this assistant: its id, or "default" for the default one.',
    ),
]
Since = Annotated[UtcTime | None, Query(description="Only those begun at or after this time.")]
Until = Annotated[UtcTime | None, Query(description="Only those begun before this time.")]


@router.get("")
async def list_conversations(
    memory: MemoryDep,
    user: CurrentUser,
    q: Words = None,
    agent_id: AgentChoice = None,
    since: Since = None,
    until: Until = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[ConversationSummaryPublic]:
    """Your conversations, newest first, each with how many messages it holds, when the last was
    said and how it opened."""
    agent = UNSET if agent_id is None else (None if agent_id == "default" else agent_id.lower())
    found = await memory.conversation_list(
        user.id, q=q, agent=agent, since=since, until=until, limit=limit + 1, offset=offset
    )
    return Page[ConversationSummaryPublic].of([ConversationSummaryPublic.of(c) for c in found], limit, offset)


@router.patch("/{conversation_id:path}")
async def update_conversation(
    memory: MemoryDep,
    accounts: AccountsDep,
    user: CurrentUser,
    conversation_id: ConversationId,
    body: ConversationUpdate,
) -> ConversationSummaryPublic:
    """Your switch for one conversation (`remember`): off, its later turns are answered with
    recall but neither stored nor learnt from. Works before its first turn too."""
    scope = await assistant_scope(accounts, user, body.agent_id)
    return ConversationSummaryPublic.of(
        await memory.remember_conversation(scope, conversation_id, body.remember)
    )


@router.get("/{conversation_id:path}")
async def get_conversation(
    memory: MemoryDep, user: CurrentUser, conversation_id: ConversationId
) -> ConversationPublic:
    """One of your conversations: every message, its turns (newest first) and the memories they
    taught. Erase it with POST /v1/erasures {"conversation_id": …}."""
    return ConversationPublic.of(await memory.conversation(user.id, conversation_id))
