"""Still true? The memories unheard for their category's time, each to keep, end now or erase."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..domain import Conflict, InvalidInput
from .forms import fact_id, number, text
from .render import page, redirect
from .routing import web_router
from .session import FormDep, SessionDep, accounts_of, memory_of

router = web_router()

HERE = "/review/stale"


@router.get(HERE)
async def stale(request: Request, session: SessionDep) -> Response:
    memory = memory_of(request)
    agents = await accounts_of(request).agents(session.user.id)
    return page(
        request,
        "stale.html",
        section="review",
        facts=await memory.stale(session.scope),
        on=session.user.review_stale,
        after_days={c: d for c, d in memory.settings.stale.model_dump().items() if d},
        agent_names={None: "Default assistant", **{a.id: a.name for a in agents}},
    )


@router.post(HERE + "/{fact}")
async def decide(request: Request, session: SessionDep, form: FormDep, fact: str) -> Response:
    """Keep (its clock starts again) or end now; erasing goes through the memory's erase page."""
    fid = fact_id(fact)
    memory = memory_of(request)
    action = text(form, "action", 10)
    try:
        if action == "keep":
            kept = await memory.keep(session.scope, fid)
            return redirect(HERE, f"Kept “{kept.text}”: it is not asked about again for a while.")
        if action == "end":
            version = number(text(form, "version", 20), low=1)
            if version is None:  # ended only as it was shown
                return redirect(HERE, "The form was incomplete: end it again.", kind="error")
            ended = await memory.update(session.scope, fid, version=version, valid_to=memory.clock())
            return redirect(
                HERE, f"Ended “{ended.text}”: no longer recalled as true now; its page can bring it back."
            )
    except Conflict:
        return redirect(HERE, "That memory changed meanwhile; it is shown as it is now.", kind="error")
    except InvalidInput as exc:
        return redirect(HERE, str(exc), kind="error")
    return redirect(HERE, "Choose keep or end.", kind="error")


@router.post("/settings/stale")
async def switch(request: Request, session: SessionDep, form: FormDep) -> Response:
    choice = text(form, "stale", 10)
    if choice not in ("on", "off"):
        return redirect("/settings", "Choose on or off for the “Still true?” list.", kind="error")
    await accounts_of(request).set_review_stale(session.user.id, choice == "on")
    said = "Memories unheard for long are offered." if choice == "on" else "The “Still true?” list is off."
    return redirect("/settings", said)
