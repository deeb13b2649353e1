"""One memory: its page (history, sources, corrections) and the changes a person makes to it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from starlette.requests import Request
from starlette.responses import Response

from ..domain import MAX_TEXT, Category, Conflict, Duplicate, InvalidInput, RecallSummary, Status
from .erasure import Choices, agent_names, receipt_page
from .forms import choice, fact_id, flag, number, text
from .history import story
from .render import ago, local_path, page, plural, redirect
from .routing import web_router
from .session import FormDep, Session, SessionDep, accounts_of, memory_of

router = web_router()


async def render_fact(
    request: Request,
    session: Session,
    fact_id: str,
    *,
    edit: dict[str, str] | None = None,
    error: str = "",
    status: int = 200,
) -> Response:
    memory = memory_of(request)
    told = await story(memory, session.scope, fact_id)
    agents = {a.id: a.name for a in await accounts_of(request).agents(session.user.id)}
    fact = told.fact
    recalled = await memory.recalls(session.scope, fact_id) if session.user.record_recalls else None
    # the receipt of the erasure that took its text
    erased_by = await memory.erased_by(session.user.id, fact.id) if fact.purged else None
    return page(
        request,
        "fact.html",
        status=status,
        section="memories",
        story=told,
        fact=fact,
        agent_name=agents.get(fact.agent_id, "a deleted agent") if fact.agent_id else "Default assistant",
        recalled=recall_line(recalled, agents, memory.clock()) if recalled else None,
        categories=list(Category),
        edit=edit or {"text": fact.text, "category": str(fact.category), "version": str(fact.version)},
        error=error,
        max_text=MAX_TEXT,
        here=f"/memories/{fact.id}",
        erased_by=erased_by,
    )


def recall_line(s: RecallSummary, agents: dict[str, str], now: datetime) -> str:
    """Last recalled by Chef 3 hours ago, 3 times in the last 7 days."""
    if s.last is None:
        return "Not recalled by an assistant in the last 7 days."
    who = s.last.agent_id
    name = (agents.get(who) or "a deleted agent") if who else "the default assistant"
    return f"Last recalled by {name} {ago(s.last.at, now)}, {plural(s.count, 'time')} in the last 7 days."


@router.get("/memories/{fact}")
async def show(request: Request, session: SessionDep, fact: str) -> Response:
    return await render_fact(request, session, fact_id(fact))


@router.post("/memories/{fact}/edit")
async def edit(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    """Correct in place: same id and created date; the old text stays in the history."""
    fid = fact_id(fact)
    typed = {
        "text": text(form, "text", MAX_TEXT + 1),
        "category": text(form, "category", 40),
        "version": text(form, "version", 20),
    }
    category = choice(typed["category"], Category)
    version = number(typed["version"], low=1)
    if not typed["text"]:
        problem = "The text cannot be empty. To take a memory back, retract it instead."
        return await render_fact(request, session, fid, edit=typed, error=problem, status=422)
    if len(typed["text"]) > MAX_TEXT:
        problem = f"That is longer than {MAX_TEXT} characters."
        return await render_fact(request, session, fid, edit=typed, error=problem, status=422)
    if category is None or version is None:
        problem = "The form was incomplete; check the category and save again."
        return await render_fact(request, session, fid, edit=typed, error=problem, status=422)
    memory = memory_of(request)
    try:
        edited = await memory.edit(session.scope, fid, typed["text"], version=version, category=category)
    except Duplicate as exc:  # a conflict of its own: saving again would not help
        problem = (
            f"Another of your memories already says this ({exc.existing}): open it from the list to"
            " keep that one, or change the text here."
        )
        return await render_fact(request, session, fid, edit=typed, error=problem, status=409)
    except Conflict:
        current = await memory.get(session.scope, fid)
        typed["version"] = str(current.version)
        problem = (
            "This memory changed since you opened it (it now reads as shown above)."
            " Your text is kept below: save again to apply it."
        )
        return await render_fact(request, session, fid, edit=typed, error=problem, status=409)
    except InvalidInput as exc:
        return await render_fact(request, session, fid, edit=typed, error=str(exc), status=422)
    back = local_path(form.get("next"), f"/memories/{fid}")
    return redirect(back, "Corrected. The earlier text is kept in its history.", undo=edited)


@router.post("/memories/{fact}/end")
async def end(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    """Set, move or clear (an empty day) when the memory stops being true: it holds until the
    end of that day (UTC); past it, it is no longer recalled as true now."""
    fid = fact_id(fact)
    version, day = number(text(form, "version", 20), low=1), text(form, "until", 20)
    try:
        until = datetime.combine(date.fromisoformat(day), time(), UTC) + timedelta(days=1) if day else None
    except ValueError:
        return await render_fact(
            request, session, fid, error=f"{day!r} is not a day (YYYY-MM-DD).", status=422
        )
    if version is None:
        return await render_fact(request, session, fid, error="The form was incomplete.", status=422)
    try:
        ended = await memory_of(request).update(session.scope, fid, version=version, valid_to=until)
    except Conflict:
        problem = "This memory changed since you opened it (it now reads as shown above): set its end again."
        return await render_fact(request, session, fid, error=problem, status=409)
    except InvalidInput as exc:
        return await render_fact(request, session, fid, error=str(exc), status=422)
    said = f"It holds until the end of {day}." if until else "It has no end now."
    return redirect(f"/memories/{fid}", f"Saved. {said}", undo=ended)


@router.post("/memories/{fact}/retract")
async def retract(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    fid = fact_id(fact)
    reason = text(form, "reason", 500) or None
    gone = await memory_of(request).retract(session.scope, fid, reason=reason)
    back = local_path(form.get("next"), f"/memories/{fid}")
    return redirect(back, "Retracted: it is no longer recalled.", undo=gone)


@router.post("/memories/{fact}/undo")
async def undo(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    """Take back the memory's last change (a correction, an end, a retraction, an approval) if
    nothing changed it since (Memory.undo)."""
    fid = fact_id(fact)
    version = number(text(form, "version", 20), low=1)
    if version is None:
        return redirect(f"/memories/{fid}", "Nothing was undone: the form was incomplete.", kind="error")
    try:
        back = await memory_of(request).undo(session.scope, fid, version)
    except Conflict:
        said = "Nothing was undone: the memory changed since (its history shows how)."
        return redirect(f"/memories/{fid}", said, kind="error")
    except InvalidInput:
        said = "Nothing was undone: its last change is not one that Undo takes back."
        return redirect(f"/memories/{fid}", said, kind="error")
    if back.status == Status.CANDIDATE:
        return redirect("/review", "Undone: it waits for your review again.")
    return redirect(f"/memories/{fid}", "Undone: the memory is as it was before.")


@router.post("/memories/{fact}/restore")
async def restore(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    fid = fact_id(fact)
    await memory_of(request).restore(session.scope, fid)
    return redirect(local_path(form.get("next"), f"/memories/{fid}"), "Restored: it is active again.")


@router.post("/memories/{fact}/pin")
async def pin(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    fid = fact_id(fact)
    pinned = flag(form, "pinned")
    await memory_of(request).pin(session.scope, fid, pinned)
    said = "Pinned: it is recalled in every conversation." if pinned else "Unpinned."
    return redirect(local_path(form.get("next"), f"/memories/{fid}"), said)


@router.get("/memories/{fact}/purge")
async def confirm_purge(request: Request, session: SessionDep, fact: str) -> Response:
    memory = memory_of(request)
    fid = fact_id(fact)
    found = await memory.get(session.scope, fid)
    events = await memory.history(session.scope, fid)
    plan = await memory.erasure_plan(session.scope, fid)
    return page(
        request,
        "purge.html",
        section="memories",
        fact=found,
        events=len(events),
        plan=plan,
        agent_names=await agent_names(request, session.user.id),
        here=f"/memories/{fid}",
    )


@router.post("/memories/{fact}/purge")
async def purge(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    fid = fact_id(fact)
    chose = Choices.of(form)
    _, receipt = await memory_of(request).purge(
        session.scope,
        fid,
        reason=text(form, "reason", 500) or None,
        message_ids=chose.message_ids,
        keep=chose.keep,
        other_agents=chose.other_agents,
    )
    return await receipt_page(
        request,
        receipt,
        "Erased, with the messages it was learnt from. Its history keeps a record that an erasure"
        " happened, without the text; this is its signed receipt.",
    )
