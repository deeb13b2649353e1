"""The audit log, its chain's verification, and the download of everything."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..batch import export
from ..http.headers import HEADERS
from .forms import number
from .history import actor_label, entry
from .render import page
from .routing import web_router
from .session import SessionDep, accounts_of, memory_of

router = web_router()

EVENTS_PER_PAGE = 50


@router.get("/audit")
async def audit(request: Request, session: SessionDep) -> Response:
    memory = memory_of(request)
    offset = number(request.query_params.get("offset"), 0) or 0
    events = await memory.events(session.user.id)
    report = await memory.verify_audit(session.user.id)
    newest = events[::-1][offset : offset + EVENTS_PER_PAGE]
    return page(
        request,
        "audit.html",
        section="audit",
        entries=[entry(e, {}) for e in newest],
        report=report,
        total=len(events),
        offset=offset,
        per_page=EVENTS_PER_PAGE,
        more=offset + EVENTS_PER_PAGE < len(events),
        actor_label=actor_label,
    )


@router.get("/export.jsonl")
async def download(request: Request, session: SessionDep) -> Response:
    memory = memory_of(request)
    day = memory.clock().strftime("%Y-%m-%d")
    headers = {
        **HEADERS,
        "Content-Disposition": f'attachment; filename="mnemo-{day}.jsonl"',
    }
    return StreamingResponse(
        export.jsonl(memory, accounts_of(request), session.user),
        media_type="application/x-ndjson",
        headers=headers,
    )
