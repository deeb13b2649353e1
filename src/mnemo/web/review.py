"""The review queue: what the extractor proposed and held for the person to decide."""

from __future__ import annotations

import contextlib

from starlette.requests import Request
from starlette.responses import Response

from ..domain import MAX_TEXT, Conflict, Fact, InvalidInput, NotFound, Status
from .forms import PAGE_SIZE, fact_id, number, text
from .history import source_messages
from .memories import each, scope_for
from .render import page, redirect
from .routing import web_router
from .session import FormDep, Session, SessionDep, accounts_of, memory_of

router = web_router()

_BULK_LIMIT = 200
STALE_SHOWN = 50  # the "Still true?" link counts this many at most


async def render_review(
    request: Request,
    session: Session,
    *,
    error: str = "",
    typed: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    memory = memory_of(request)
    query = request.query_params
    offset = number(query.get("offset"), 0) or 0
    agent = text(query, "agent", 100)
    problems: list[str] = []
    accounts = accounts_of(request)
    scope = await scope_for(accounts, session, agent, problems)
    facts = await memory.list(scope, statuses=(Status.CANDIDATE,), limit=PAGE_SIZE + 1, offset=offset)
    shown = facts[:PAGE_SIZE]
    replaced = {}
    for fact in shown:
        if fact.supersedes:
            with contextlib.suppress(NotFound):
                replaced[fact.id] = await memory.get(session.scope, fact.supersedes)
    agents = await accounts.agents(session.user.id)
    return page(
        request,
        "review.html",
        status=status,
        section="review",
        facts=shown,
        more=len(facts) > PAGE_SIZE,
        offset=offset,
        page_size=PAGE_SIZE,
        agent=agent,
        agents=agents,
        agent_names={None: "Default assistant", **{a.id: a.name for a in agents}},
        problems=problems,
        messages=await source_messages(memory, session.user.id, shown),
        replaced=replaced,
        error=error,
        typed=typed or {},
        max_text=MAX_TEXT,
        stale=len(await memory.stale(session.scope, limit=STALE_SHOWN + 1)),
        stale_shown=STALE_SHOWN,
        stale_on=session.user.review_stale,
    )


@router.get("/review")
async def review(request: Request, session: SessionDep) -> Response:
    return await render_review(request, session)


@router.post("/review/bulk")
async def bulk(request: Request, session: SessionDep, form: FormDep) -> Response:
    action = text(form, "action", 20)
    ids = [v for v in form.getlist("ids") if isinstance(v, str)][:_BULK_LIMIT]
    if action not in ("approve", "reject"):
        return redirect("/review", "Choose approve or reject.", kind="error")
    if not ids:
        return redirect("/review", "Tick at least one candidate first.", kind="error")
    memory = memory_of(request)
    done, skipped = await each(memory.approve if action == "approve" else memory.reject, session.scope, ids)
    said = f"{'Approved' if action == 'approve' else 'Rejected'} {done}."
    if skipped:
        said += f" {skipped} could not be (no longer waiting for review)."
    return redirect("/review", said, kind="ok" if done else "error")


@router.post("/review/{fact}")
async def decide(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    """Approve, reject, or edit the text and then approve."""
    fid = fact_id(fact)
    memory = memory_of(request)
    action = text(form, "action", 20)
    if action == "reject":
        done = await memory.reject(session.scope, fid, reason=text(form, "reason", 500) or None)
        return redirect("/review", f"Rejected “{done.text}”.")
    if action == "edit-approve":
        new_text = text(form, "text", MAX_TEXT + 1)
        if not new_text or len(new_text) > MAX_TEXT:
            problem = "The text cannot be empty." if not new_text else f"At most {MAX_TEXT} characters."
            return await _again(request, session, fid, new_text, problem)
        try:
            current = await memory.get(session.scope, fid)
            version = number(text(form, "version", 20), low=1)
            edited: Fact = await memory.edit(session.scope, fid, new_text, version=version or current.version)
        except Conflict:
            return await _again(
                request, session, fid, new_text, "It changed meanwhile; check it and try again."
            )
        except InvalidInput as exc:
            return await _again(request, session, fid, new_text, str(exc))
        done = await memory.approve(session.scope, edited.id)
        return redirect("/review", f"Approved, as edited: “{done.text}”.")
    if action == "approve":
        done = await memory.approve(session.scope, fid)
        # taken back with Undo, unless it went into a memory that already said the same
        return redirect("/review", f"Approved “{done.text}”.", undo=done if done.id == fid else None)
    return redirect("/review", "Choose approve or reject.", kind="error")


async def _again(request: Request, session: Session, fid: str, typed: str, problem: str) -> Response:
    return await render_review(request, session, error=problem, typed={fid: typed}, status=422)
