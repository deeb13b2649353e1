"""Conversations: what the person said, found by words, assistant and date, and each one read
whole with what its turns taught, and a way to erase it."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from ..domain import UNSET, InvalidInput, InvalidValue, NotFound, StoredTurn, conversation_id
from .forms import PAGE_SIZE, number, text
from .render import page, redirect
from .routing import web_router
from .session import FormDep, SessionDep, accounts_of, memory_of
from .taught import dropped, kinds, said

router = web_router()


def _day(value: str) -> datetime | None:
    """The start (UTC) of a day typed as YYYY-MM-DD; None for anything else."""
    try:
        return datetime.combine(date.fromisoformat(value), time(), UTC)
    except ValueError:
        return None


@router.get("/conversations")
async def conversations(request: Request, session: SessionDep) -> Response:
    query = request.query_params
    q, agent = text(query, "q", 2000), text(query, "agent", 100)
    since, until = _day(text(query, "from", 20)), _day(text(query, "to", 20))
    offset = number(query.get("offset"), 0) or 0
    agents = await accounts_of(request).agents(session.user.id)
    chosen: object = UNSET
    if agent == "default":
        chosen = None
    elif agent in {a.id for a in agents}:
        chosen = agent
    problem = ""
    try:
        found = await memory_of(request).conversation_list(
            session.user.id,
            q=q or None,
            agent=chosen,
            since=since,
            until=until + timedelta(days=1) if until and until.date() < date.max else None,
            limit=PAGE_SIZE + 1,
            offset=offset,
        )
    except InvalidInput as exc:
        found, problem = [], str(exc)
    # the filters as given, for the pages' links
    kept = {
        k: v
        for k, v in {
            "q": q,
            "agent": agent,
            "from": text(query, "from", 20),
            "to": text(query, "to", 20),
        }.items()
        if v
    }
    return page(
        request,
        "conversations.html",
        section="conversations",
        conversations=found[:PAGE_SIZE],
        more=len(found) > PAGE_SIZE,
        offset=offset,
        page_size=PAGE_SIZE,
        url_at=lambda at: "/conversations?" + urlencode({**kept, "offset": at}),
        filters={"q": q, "agent": agent if chosen is not UNSET else "", "from": since, "to": until},
        agents=agents,
        agent_names={None: "Default assistant", **{a.id: a.name for a in agents}},
        problem=problem,
    )


@router.post("/conversation/remember")
async def switch(request: Request, session: SessionDep, form: FormDep) -> Response:
    """The person's switch for one conversation, from its page."""
    asked = form.get("id")
    on = text(form, "remember", 10) == "on"
    try:
        conversation = conversation_id(asked if isinstance(asked, str) else "")
    except InvalidValue:
        raise NotFound("no such conversation") from None
    await memory_of(request).conversation(session.user.id, conversation)  # NotFound: not theirs
    await memory_of(request).remember_conversation(session.scope, conversation, on)
    said = (
        "Remembered again: its next turns are stored and learnt from."
        if on
        else ("Not remembered: its next turns are answered, but not stored or learnt from.")
    )
    return redirect("/conversation?" + urlencode({"id": conversation}), said)


@router.get("/conversation")
async def conversation(request: Request, session: SessionDep) -> Response:
    """One conversation, named by `?id=` (an id of any characters: no path segment to misread)."""
    asked = str(request.query_params.get("id", ""))  # as sent: a NUL is no character to drop
    try:
        conversation = conversation_id(asked)
    except InvalidValue:
        raise NotFound(f"no conversation {asked[:80]!r}") from None
    view = await memory_of(request).conversation(session.user.id, conversation)
    agents = await accounts_of(request).agents(session.user.id)
    # each turn's note goes under its last message still in the conversation
    closing: dict[str, list[StoredTurn]] = {}
    for turn in reversed(view.turns):  # oldest first
        here = [m for m in turn.message_ids if any(x.id == m for x in view.messages)]
        if here:
            closing.setdefault(here[-1], []).append(turn)
    return page(
        request,
        "conversation.html",
        section="conversations",
        view=view,
        closing=closing,
        memories={f.id: f for f in view.memories},
        agent_names={None: "Default assistant", **{a.id: a.name for a in agents}},
        said=said,
        kinds=kinds,
        dropped=dropped,
    )
