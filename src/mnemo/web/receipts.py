"""The receipts of the person's erasures: the list, each one for people with Download and
Verify, and a check of a receipt they kept (the same as POST /v1/erasures/verify)."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from .. import receipts
from ..domain import Receipt, known_id
from ..http.headers import HEADERS
from .forms import PAGE_SIZE, number, text
from .render import page
from .routing import web_router
from .session import FormDep, Session, SessionDep, memory_of

router = web_router()

MAX_RECEIPT = 1_000_000  # characters of a pasted receipt (one holds ids and counts, never texts)
# what each count of a receipt's body is, in words: (one, many)
WORDS = {
    "facts": ("memory", "memories"),
    "messages": ("message", "messages"),
    "conversations": ("conversation", "conversations"),
    "jobs": ("queued turn", "queued turns"),
    "backfill_marks": ("backfill mark", "backfill marks"),
    "keys": ("API key", "API keys"),
}


async def _list(
    request: Request, session: Session, *, checked: dict | None = None, status: int = 200
) -> Response:
    offset = number(request.query_params.get("offset"), 0) or 0
    found = await memory_of(request).receipts(session.user.id, limit=PAGE_SIZE + 1, offset=offset)
    return page(
        request,
        "receipts.html",
        status=status,
        section="settings",
        receipts=found[:PAGE_SIZE],
        more=len(found) > PAGE_SIZE,
        offset=offset,
        page_size=PAGE_SIZE,
        url_at=lambda at: f"/erasures?offset={at}",
        words=WORDS,
        checked=checked,
    )


async def _show(request: Request, receipt: Receipt, *, checked: dict | None = None) -> Response:
    document = json.dumps(receipts.document(receipt), indent=2, ensure_ascii=False)
    return page(
        request,
        "receipt.html",
        section="settings",
        receipt=receipt,
        document=document,
        words=WORDS,
        checked=checked,
    )


async def _check(request: Request, session: Session, document: object) -> dict:
    """The same check as POST /v1/erasures/verify: whether it is valid, and why not."""
    problems = await memory_of(request).check_receipt(document, session.user.id)
    return {"valid": not problems, "problems": problems}


@router.get("/erasures")
async def list_receipts(request: Request, session: SessionDep) -> Response:
    return await _list(request, session)


@router.post("/erasures/verify")
async def verify_kept(request: Request, session: SessionDep, form: FormDep) -> Response:
    """A receipt the person kept, pasted: checked as the API checks it."""
    pasted = text(form, "receipt", MAX_RECEIPT + 1)
    if not pasted or len(pasted) > MAX_RECEIPT:
        problem = "Paste a receipt first." if not pasted else "That is far longer than any receipt."
        return await _list(request, session, checked={"valid": False, "problems": [problem]}, status=422)
    try:
        document = receipts.parsed(pasted.encode())
    except (ValueError, RecursionError, receipts.DuplicateKey) as exc:
        checked = {"valid": False, "problems": [f"not a receipt's JSON: {exc}"]}
        return await _list(request, session, checked=checked, status=422)
    return await _list(request, session, checked=await _check(request, session, document))


@router.get("/erasures/{receipt}")
async def show_receipt(request: Request, session: SessionDep, receipt: str) -> Response:
    return await _show(
        request, await memory_of(request).receipt(session.user.id, known_id(receipt, "receipt"))
    )


@router.post("/erasures/{receipt}/verify")
async def verify(request: Request, session: SessionDep, form: FormDep, receipt: str) -> Response:
    found = await memory_of(request).receipt(session.user.id, known_id(receipt, "receipt"))
    return await _show(request, found, checked=await _check(request, session, receipts.document(found)))


@router.get("/erasures/{receipt}/receipt.json")
async def download(request: Request, session: SessionDep, receipt: str) -> Response:
    found = await memory_of(request).receipt(session.user.id, known_id(receipt, "receipt"))
    body = json.dumps(receipts.document(found), indent=2, ensure_ascii=False) + "\n"
    headers = {**HEADERS, "Content-Disposition": f'attachment; filename="mnemo-receipt-{found.id}.json"'}
    return Response(body, media_type="application/json", headers=headers)
