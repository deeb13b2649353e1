"""Try it: a small chat through the proxy's own code, with what memory recalled for each reply.

The page keeps the conversation in the form itself (a hidden field the server
reads back), so it holds no state of its own; each turn goes to the chat proxy
(`Chat`, which the app that mounts both hands to `web.install`), exactly as a
client of /v1/chat/completions would send it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..domain import User, as_unicode, is_unicode, is_uuid, new_id
from ..http.headers import AGENT_HEADER, CONVERSATION_HEADER, HEADERS, REMEMBER_HEADER
from ..recall.fuse import Hit
from .forms import fact_id, flag, text
from .render import environment, page
from .routing import web_router
from .session import BadForm, FormDep, Session, SessionDep, accounts_of, memory_of
from .taught import Note, note

router = web_router()


@dataclass(frozen=True)
class Reply:
    """The chat proxy's answer to one turn of the page."""

    text: str  # the model's words
    recalled: Sequence[Hit]  # what memory recalled for the message, injected before it
    not_stored: str | None = None  # why the turn was not stored, when storing it failed
    turn_id: str | None = None  # the turn stored to learn from, when it was


class ChatRefused(Exception):
    """A turn the chat proxy refused, or the upstream failed: the page says why, with its status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Chat(Protocol):
    """The chat proxy, as the page uses it."""

    @property
    def configured(self) -> bool:
        """Whether an upstream model is configured."""
        ...

    async def reply(self, user: User, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        """The proxy's reply to `body` (OpenAI's chat request) with mnemo's `headers`, the turn
        stored before it returns; ChatRefused says why not."""
        ...


def chat_of(request: Request) -> Chat:
    return request.app.state.web_chat


MAX_MESSAGE = 8000
MAX_TURNS = 20  # exchanges sent back as context; older ones drop off the front
MAX_DEPTH = 4  # the transcript: a list of messages, each with a list of what was recalled
TOO_DEEP = "the conversation sent back is nested deeper than a conversation is."
_ARMS = {
    "pinned": "pinned",
    "semantic": "similar meaning",
    "topic": "similar topic, names aside",
    "parts": "similar to a part of the question",
    "lexical": "same words",
    "recency": "recent",
    "time": "from the time asked about",
}


def _history(raw: str) -> list[dict[str, Any]]:
    """The transcript the page sent back; anything malformed is dropped, not trusted, and
    anything nested deeper than a transcript is refused."""
    try:
        items = json.loads(raw) if raw else []
    except RecursionError as exc:  # deeper than the parser goes, so far deeper than a transcript
        raise BadForm(TOO_DEEP) from exc
    except ValueError:
        return []
    if _depth(items) > MAX_DEPTH:
        raise BadForm(TOO_DEEP)
    if not is_unicode(json.dumps(items, ensure_ascii=False)):  # it could not be sent on, nor shown
        raise BadForm("the conversation sent back holds text that is not valid Unicode.")
    kept = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            continue
        if not isinstance(item.get("content"), str):
            continue
        recalled = item.get("recalled") if item["role"] == "assistant" else None
        recalled = [
            {"id": str(r.get("id", "")), "text": str(r.get("text", "")), "why": str(r.get("why", ""))}
            for r in (recalled if isinstance(recalled, list) else [])
            if isinstance(r, dict)
        ]
        turn = item.get("turn") if item["role"] == "assistant" else None
        kept.append(
            {
                "role": item["role"],
                "content": item["content"][:MAX_MESSAGE],
                "recalled": recalled,
                "turn": turn.lower() if isinstance(turn, str) and is_uuid(turn) else None,
            }
        )
    return kept[-2 * MAX_TURNS :]


def _depth(value: object) -> int:
    """How many lists and objects deep `value` nests (walked without recursion)."""
    deepest, waiting = 0, [(value, 1)]
    while waiting:
        item, level = waiting.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            waiting.extend((inner, level + 1) for inner in item)
    return deepest


async def render_chat(
    request: Request,
    session: Session,
    *,
    history: list[dict[str, Any]] | None = None,
    conversation: str = "",
    agent: str = "",
    forget: bool = False,
    message: str = "",
    error: str = "",
    status: int = 200,
) -> Response:
    accounts = accounts_of(request)
    conversation = conversation or new_id()
    if not forget:  # the box shows the conversation's switch as stored (off on its page, say)
        forget = not await memory_of(request).remembers(session.user.id, conversation)
    return page(
        request,
        "chat.html",
        status=status,
        section="try",
        history=history or [],
        notes=await _notes(request, session, history or []),
        history_json=json.dumps(history or [], ensure_ascii=False),
        conversation=conversation,
        agent=agent,
        forget=forget,
        agents=await accounts.agents(session.user.id),
        message=message,
        error=error,
        configured=chat_of(request).configured,
        enabled=await accounts.memory_enabled(session.user.id),
        max_message=MAX_MESSAGE,
    )


async def _notes(request: Request, session: Session, history: list[dict[str, Any]]) -> dict[str, Note]:
    """What each turn of the conversation taught memory, by turn id: one read of the person's
    latest turns (a turn older than those, or not theirs, gets no note)."""
    ids = {m["turn"] for m in history if m.get("turn")}
    if not ids:
        return {}
    memory = memory_of(request)
    latest = await memory.turns(session.user.id, limit=2 * MAX_TURNS + 10)
    return {t.id: await note(memory, session.scope, t) for t in latest if t.id in ids}


@router.get("/try/turns/{turn_id}")
async def turn_note(request: Request, session: SessionDep, turn_id: str) -> Response:
    """What one turn taught, for the page's script to show once learning settles:
    `settled`, and `html`, the note as the page itself renders it."""
    memory = memory_of(request)
    found = await note(memory, session.scope, await memory.turn(session.user.id, fact_id(turn_id, "turn")))
    html = environment.get_template("learnt_note.html").render(note=found)
    return JSONResponse({"settled": found.settled, "html": html}, headers=HEADERS)


@router.get("/try")
async def chat_page(request: Request, session: SessionDep) -> Response:
    return await render_chat(request, session)


@router.post("/try")
async def say(request: Request, session: SessionDep, form: FormDep) -> Response:
    history = _history(text(form, "history", 2_000_000))
    conversation = text(form, "conversation", 200) or new_id()
    agent = text(form, "agent", 100).lower()
    forget = flag(form, "forget")  # don't remember this conversation: answered, not stored
    forgot = flag(form, "forgot")  # the box as the page showed it: unticked now, remembered again
    message = text(form, "message", MAX_MESSAGE + 1)
    keep: dict[str, Any] = {
        "history": history,
        "conversation": conversation,
        "agent": agent,
        "forget": forget,
        "message": message,
    }
    if not message:
        return await render_chat(request, session, **keep, error="Write a message first.", status=422)
    if len(message) > MAX_MESSAGE:
        problem = f"That message is over {MAX_MESSAGE} characters."
        return await render_chat(request, session, **keep, error=problem, status=422)
    headers = {CONVERSATION_HEADER: conversation}
    if forget or forgot:  # the person ticked or unticked the box: their switch, as they set it
        headers[REMEMBER_HEADER] = "off" if forget else "on"
    if agent and is_uuid(agent):
        headers[AGENT_HEADER] = agent
    messages = [{"role": m["role"], "content": m["content"]} for m in history]
    body = {"messages": [*messages, {"role": "user", "content": message}]}
    try:
        done = await chat_of(request).reply(session.user, body, headers)
    except ChatRefused as err:
        return await render_chat(request, session, **keep, error=err.message, status=err.status)
    recalled = [
        {"id": h.fact.id, "text": h.fact.text, "why": ", ".join(_ARMS.get(a, a) for a in sorted(h.reasons))}
        for h in done.recalled
    ]
    history += [
        {"role": "user", "content": message, "recalled": [], "turn": None},
        # the model's words, shown as sent, but for what no page can hold (a lone surrogate)
        {"role": "assistant", "content": as_unicode(done.text), "recalled": recalled, "turn": done.turn_id},
    ]
    problem = ""
    if done.not_stored:
        problem = f"The reply came, but this turn was not stored to learn from: {done.not_stored}."
    return await render_chat(
        request,
        session,
        history=history,
        conversation=conversation,
        agent=agent,
        forget=forget,
        error=problem,
    )
