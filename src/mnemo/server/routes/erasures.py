"""Erasures: see what one would take, carry it out, keep and check its signed receipt.

Erasing a memory also erases the messages it was learnt from; erasing a
conversation removes it with its messages and jobs (and, asked, the memories
learnt from it). Neither text is learnt again. See mnemo.erasure.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi import status as http

from ... import receipts
from ...auth import CurrentUser, key_in_use
from ...domain import known_id
from ...erasure import Plan
from ...http.responses import errors
from ...memory import Memory
from ...schemas import FactPublic, Page
from ...schemas.erasures import (
    About,
    EraseConversation,
    EraseEverything,
    EraseMemory,
    ErasureCreate,
    ErasurePlanPublic,
    MessageFound,
    ReceiptCheck,
    ReceiptKey,
    ReceiptPublic,
)
from ..deps import MemoryDep
from ..params import Limit, Offset, own_scope

router = APIRouter(prefix="/v1/erasures", tags=["erasures"], responses=errors(404, 409))


async def _plan(memory: Memory, user_id: str, body: ErasureCreate) -> Plan:
    if isinstance(body, EraseMemory):
        return await memory.erasure_plan(
            own_scope(user_id),
            body.memory_id,
            body.message_ids,
            keep=set(body.keep_message_ids),
            other_agents=body.with_other_agents,
        )
    if isinstance(body, EraseConversation):
        return await memory.conversation_erasure_plan(user_id, body.conversation_id)
    if isinstance(body, EraseEverything):
        return await memory.everything_plan(user_id)
    return await memory.selection_plan(
        user_id,
        body.memory_ids,
        body.message_ids,
        keep=set(body.keep_message_ids),
        other_agents=body.with_other_agents,
    )


@router.post("/preview")
async def preview_erasure(memory: MemoryDep, user: CurrentUser, body: ErasureCreate) -> ErasurePlanPublic:
    """What an erasure (the same body as POST /v1/erasures) would take, each message shown where
    it is (conversation, time, role) with its text or the part that says what goes; and what
    stays: the memories learnt from what goes, the longer messages that say it (offered), the
    same text in your other agents' memories. Nothing is erased."""
    return ErasurePlanPublic.of(await _plan(memory, user.id, body))


@router.get("/about")
async def about(
    memory: MemoryDep,
    user: CurrentUser,
    q: Annotated[str, Query(min_length=1, max_length=500, description="A subject, in its words.")],
) -> About:
    """Every memory and message that holds these words (case and spacing aside): tick what
    goes, then erase it with `memory_ids` and `message_ids`."""
    facts, messages = await memory.about(user.id, q)
    return About(
        memories=[FactPublic.of(f) for f in facts],
        messages=[MessageFound(conversation_id=c, message_id=m, text=t) for c, m, t in messages],
    )


@router.post("", status_code=http.HTTP_201_CREATED)
async def erase(
    memory: MemoryDep,
    user: CurrentUser,
    body: ErasureCreate,
    key: Annotated[str | None, Depends(key_in_use)],
) -> ReceiptPublic:
    """Erase for good, with a signed receipt of what went: one memory with the messages it was
    learnt from, one conversation, what you ticked, or everything (every memory, conversation,
    queued turn, agent and API key but the one this request uses, whose name is overwritten;
    you and your audit log remain)."""
    if isinstance(body, EraseMemory):
        _, receipt = await memory.purge(
            own_scope(user.id),
            body.memory_id,
            actor="user",
            message_ids=body.message_ids,
            keep=set(body.keep_message_ids),
            other_agents=body.with_other_agents,
        )
    elif isinstance(body, EraseConversation):
        receipt = await memory.erase_conversation(
            user.id, body.conversation_id, with_facts=body.with_memories, actor="user"
        )
    elif isinstance(body, EraseEverything):
        receipt = await memory.erase_everything(user.id, keep_key=key, actor="user")
    else:
        receipt = await memory.erase_selection(
            user.id,
            body.memory_ids,
            body.message_ids,
            actor="user",
            keep=set(body.keep_message_ids),
            other_agents=body.with_other_agents,
        )
    return ReceiptPublic.of(receipt, await memory.lingering())


@router.get("/key")
async def receipt_key(memory: MemoryDep, user: CurrentUser) -> ReceiptKey:
    """The public key that checks this server's receipts: keep it to check them elsewhere."""
    return ReceiptKey(public_key=await memory.receipt_key())


@router.post("/verify")
async def verify_receipt(
    request: Request, memory: MemoryDep, user: CurrentUser, receipt: Annotated[dict[str, Any], Body()]
) -> ReceiptCheck:
    """Whether a receipt of yours (its `body` and `signature`) was signed by this server,
    unchanged, and names an erasure your audit log holds. A receipt whose JSON names a key
    twice in one object is not valid (readers differ on which value counts)."""
    try:
        receipts.parsed(
            await request.body()
        )  # the body as sent: `receipt` kept the last of a twice-named key
    except receipts.DuplicateKey as exc:
        return ReceiptCheck(valid=False, problems=[str(exc)])
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
    """One of the person's erasure receipts: its body and signature, as `POST /v1/erasures/verify`
    checks it. Another person's: 404."""
    return ReceiptPublic.of(await memory.receipt(user.id, known_id(receipt_id, "receipt")))
