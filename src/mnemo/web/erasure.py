"""Erasing more than one memory: those ticked on the memories page, a conversation (its
memories offered, not forced), everything about a subject (the person ticks what goes) and all
of the person's data (typed confirmation). A memory alone, and receipts: facts.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from .. import keys
from ..domain import InvalidInput, InvalidValue, NotFound, Receipt, conversation_id
from ..erasure import CONFIRM_EVERYTHING as EVERYTHING
from .forms import fact_id, flag, text
from .render import page, redirect
from .routing import web_router
from .session import FormDep, SessionDep, accounts_of, memory_of

router = web_router()

_TICKS = 10_000
_GONE = "Some of what you ticked is no longer there; look again."
_NONE = "Tick at least one memory that is not erased yet."
_DONE = "Erased what you ticked; this is its signed receipt."


async def receipt_page(request: Request, receipt: Receipt, said: str) -> Response:
    """To the erasure's receipt, saying what was erased; and, while the erased text stays in the
    database's files a while, why (Memory.lingering)."""
    lingering = await memory_of(request).lingering()
    return redirect(f"/erasures/{receipt.id}", f"{said} Note: {lingering}." if lingering else said)


@dataclass(frozen=True, slots=True)
class Choices:
    """What the person chose on an erasure's page: the messages ticked, those shown and not
    ticked (they stay), and whether the same text goes from their other agents' memories."""

    message_ids: list[str]
    keep: set[str]
    other_agents: bool

    @classmethod
    def of(cls, form: FormData) -> Choices:
        ticked = [v for v in form.getlist("message") if isinstance(v, str)][:_TICKS]
        shown = {v for v in form.getlist("shown") if isinstance(v, str)}
        return cls(ticked, shown - set(ticked), flag(form, "other_agents"))


async def agent_names(request: Request, user_id: str) -> dict[str, str]:
    return {a.id: a.name for a in await accounts_of(request).agents(user_id)}


def _ticked(values: Sequence[object]) -> list[str]:
    """The ticked memories' ids, each once (one that cannot be an id: NotFound)."""
    return list(dict.fromkeys(fact_id(v) for v in values if isinstance(v, str)))[:_TICKS]


@router.get("/erase/memories")
async def confirm_memories(request: Request, session: SessionDep) -> Response:
    """What erasing the memories ticked on the memories page takes, for the person to confirm."""
    try:
        ids = _ticked(request.query_params.getlist("ids"))
        plan = await memory_of(request).selection_plan(session.user.id, ids, []) if ids else None
    except NotFound:
        return redirect("/memories", _GONE, kind="error")
    if plan is None or not plan.facts:
        return redirect("/memories", _NONE, kind="error")
    names = await agent_names(request, session.user.id)
    return page(request, "erase_memories.html", section="memories", plan=plan, ids=ids, agent_names=names)


@router.post("/erase/memories")
async def erase_memories(request: Request, session: SessionDep, form: FormDep) -> Response:
    chose = Choices.of(form)
    try:
        receipt = await memory_of(request).erase_selection(
            session.user.id,
            _ticked(form.getlist("ids")),
            chose.message_ids,
            keep=chose.keep,
            other_agents=chose.other_agents,
        )
    except NotFound:
        return redirect("/memories", _GONE, kind="error")
    except InvalidInput:
        return redirect("/memories", _NONE, kind="error")
    return await receipt_page(request, receipt, _DONE)


@router.get("/conversation/erase")
async def conversation_asked(request: Request, session: SessionDep) -> Response:
    """What erasing the conversation named by `?id=` takes (an id of any characters: no path
    segment to misread)."""
    return await conversation(request, session, str(request.query_params.get("id", "")))


@router.post("/conversation/erase")
async def erase_conversation_asked(request: Request, session: SessionDep, form: FormDep) -> Response:
    asked = form.get("id")
    return await erase_conversation(request, session, form, asked if isinstance(asked, str) else "")


@router.get("/conversations/{conversation:path}/erase")  # the older links' form
async def conversation(request: Request, session: SessionDep, conversation: str) -> Response:
    memory = memory_of(request)
    plan = await memory.conversation_erasure_plan(session.user.id, _conversation_id(conversation))
    said = await memory.messages(session.user.id, plan.conversations[0])
    return page(request, "erase_conversation.html", section="memories", plan=plan, said=len(said))


@router.post("/conversations/{conversation:path}/erase")  # the older forms' form
async def erase_conversation(
    request: Request, session: SessionDep, form: FormDep, conversation: str
) -> Response:
    receipt = await memory_of(request).erase_conversation(
        session.user.id, _conversation_id(conversation), with_facts=flag(form, "with_memories")
    )
    return await receipt_page(request, receipt, "Erased the conversation; this is its signed receipt.")


def _conversation_id(value: str) -> str:
    """A conversation id from a URL; one that cannot exist answers like one that does not."""
    try:
        return conversation_id(value)
    except InvalidValue:
        raise NotFound(f"no conversation {value[:80]!r}") from None


@router.get("/erase/about")
async def about(request: Request, session: SessionDep) -> Response:
    query = text(request.query_params, "q", 500)
    facts, messages = await memory_of(request).about(session.user.id, query) if query else ([], [])
    return page(request, "erase_about.html", section="settings", query=query, facts=facts, messages=messages)


@router.post("/erase/about")
async def erase_about(request: Request, session: SessionDep, form: FormDep) -> Response:
    query = text(form, "q", 500)
    back = f"/erase/about?{urlencode({'q': query})}" if query else "/erase/about"
    facts = [v for v in form.getlist("memory") if isinstance(v, str)][:_TICKS]
    messages = [v for v in form.getlist("message") if isinstance(v, str)][:_TICKS]
    if not facts and not messages:
        return redirect(back, "Tick at least one memory or message first.", kind="error")
    try:
        receipt = await memory_of(request).erase_selection(session.user.id, facts, messages)
    except NotFound:
        return redirect(back, _GONE, kind="error")
    return await receipt_page(request, receipt, _DONE)


@router.get("/erase/everything")
async def everything(request: Request, session: SessionDep) -> Response:
    plan = await memory_of(request).everything_plan(session.user.id)
    return page(request, "erase_everything.html", section="settings", plan=plan, phrase=EVERYTHING)


@router.post("/erase/everything")
async def erase_everything(request: Request, session: SessionDep, form: FormDep) -> Response:
    if text(form, "confirm", 100).casefold() != EVERYTHING:
        return redirect(
            "/erase/everything", f"Nothing was erased: type “{EVERYTHING}” to confirm.", kind="error"
        )
    signed_with = keys.parse(session.key)
    receipt = await memory_of(request).erase_everything(
        session.user.id, keep_key=signed_with[0] if signed_with else None
    )
    return await receipt_page(request, receipt, "Erased all of your data; this is its signed receipt.")
