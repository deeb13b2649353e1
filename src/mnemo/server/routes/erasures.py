"""Erasures: see what one would take, carry it out, keep and check its signed receipt.

Erasing a memory also erases the messages it was learnt from; erasing a
conversation removes it with its messages and jobs (and, asked, the memories
learnt from it). Neither text is learnt again. See mnemo.erasure.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi import status as http

from ...auth import CurrentUser
from ...domain import known_id
from ...http.responses import errors
from ...shapes import ConversationId, Id
from ..deps import MemoryDep
from ..params import Limit, Offset, own_scope
from ..schemas import Page
from ..schemas.erasures import ErasureCreate, ErasurePlanPublic, ReceiptCheck, ReceiptKey, ReceiptPublic

router = APIRouter(prefix="/v1/erasures", tags=["erasures"], responses=errors(404, 409))


@router.get("/preview")
async def preview_erasure(
    memory: MemoryDep,
    user: CurrentUser,
    memory_id: Annotated[Id | None, Query(description="A memory to erase.")] = None,
    conversation_id: Annotated[ConversationId | None, Query(description="A conversation to erase.")] = None,
) -> ErasurePlanPublic:
    """What erasing one memory or one conversation would take, and which memories would stay
    though learnt from what goes. Nothing is erased."""
    body = ErasureCreate(memory_id=memory_id, conversation_id=conversation_id)
    if body.memory_id is not None:
        return ErasurePlanPublic.of(await memory.erasure_plan(own_scope(user.id), body.memory_id))
    assert body.conversation_id is not None
    return ErasurePlanPublic.of(await memory.conversation_erasure_plan(user.id, body.conversation_id))


@router.post("", status_code=http.HTTP_201_CREATED)
async def erase(memory: MemoryDep, user: CurrentUser, body: ErasureCreate) -> ReceiptPublic:
    """Erase one memory (with the messages it was learnt from) or one conversation, for good;
    the signed receipt says what went."""
    if body.memory_id is not None:
        _, receipt = await memory.purge(own_scope(user.id), body.memory_id, actor="user")
    else:
        assert body.conversation_id is not None
        receipt = await memory.erase_conversation(
            user.id, body.conversation_id, with_facts=body.with_memories, actor="user"
        )
    return ReceiptPublic.of(receipt)


@router.get("/key")
async def receipt_key(memory: MemoryDep, user: CurrentUser) -> ReceiptKey:
    """The public key that checks this server's receipts: keep it to check them elsewhere."""
    return ReceiptKey(public_key=await memory.receipt_key())


@router.post("/verify")
async def verify_receipt(
    memory: MemoryDep, user: CurrentUser, receipt: Annotated[dict[str, Any], Body()]
) -> ReceiptCheck:
    """Whether a receipt of yours (its `body` and `signature`) was signed by this server,
    unchanged, and names an erasure your audit log holds."""
    problems = await memory.check_receipt(receipt, user.id)
    return ReceiptCheck(valid=not problems, problems=problems)


@router.get("")
async def list_receipts(
    memory: MemoryDep, user: CurrentUser, limit: Limit = 50, offset: Offset = 0
) -> Page[ReceiptPublic]:
    """Your erasures' receipts, newest first."""
    rows = await memory.receipts(user.id, limit=limit + 1, offset=offset)
    return Page[ReceiptPublic].of([ReceiptPublic.of(r) for r in rows], limit, offset)


@router.get("/{receipt_id}")
async def get_receipt(memory: MemoryDep, user: CurrentUser, receipt_id: str) -> ReceiptPublic:
    return ReceiptPublic.of(await memory.receipt(user.id, known_id(receipt_id, "receipt")))
