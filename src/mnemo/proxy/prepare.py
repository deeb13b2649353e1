"""Before forwarding: which agent answers, its persona, and what memory has to say."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..accounts import Accounts
from ..domain import (
    Agent,
    GatePolicy,
    InvalidValue,
    Message,
    RecallVia,
    Scope,
    Turn,
    User,
    as_unicode,
    conversation_id,
    find_agent,
    is_unicode,
    new_id,
)
from ..http.headers import AGENT_HEADER, AUTOMATION_HEADER, CONVERSATION_HEADER, REMEMBER_HEADER
from ..memory import Memory
from ..recall.fuse import Hit
from ..recall.render import SYSTEM_ROLES, inject, render
from ..sensitive import refused_name
from ..settings import Settings
from .wire import ChatError, content_text

log = logging.getLogger(__name__)

MAX_RECALLED_IDS = 50  # X-Mnemo-Recalled-Ids stays under 2 KB; X-Mnemo-Recalled counts them all


@dataclass(frozen=True)
class Prepared:
    """A request ready to forward, and what is needed to remember its turn afterwards."""

    body: dict[str, Any]
    scope: Scope
    hits: tuple[Hit, ...]  # what memory recalled for the latest user message, injected
    conversation_id: str
    automation: bool
    memory_on: bool  # the memory switch, decided once when the turn began
    # The latest user message's text, when the request ends with it (a new user
    # turn) and it has text; None for follow-ups such as tool results, whose
    # user message was stored with the request that first carried it.
    user_text: str | None
    # the id its turn is stored under, chosen ahead: a streamed reply's headers leave first
    turn_id: str = dataclasses.field(default_factory=new_id)
    gate: GatePolicy = dataclasses.field(default_factory=GatePolicy)  # the sensitive-data gate
    # when the request began: the person erasing its conversation (or everything) after it keeps
    # its turn from being stored when the reply ends (Turn.began)
    began: datetime | None = None
    # X-Mnemo-Remember: off (False) or on (True) sets the person's switch for the conversation
    # (named by X-Mnemo-Conversation; without one, off keeps only this turn); None: as it is
    remember: bool | None = None
    named: bool = False  # the conversation was named by X-Mnemo-Conversation (not a new id)
    switched_off: bool = False  # the person's switch for it, as stored, is off (and no header says on)

    @property
    def recalled(self) -> int:
        return len(self.hits)

    @property
    def recalled_ids(self) -> str:
        """The recalled facts' ids, best first, comma-separated: at most MAX_RECALLED_IDS of them."""
        return ",".join(h.fact.id for h in self.hits[:MAX_RECALLED_IDS])

    def turn(self, reply: str) -> Turn | None:
        if self.user_text is None:
            return None
        # PostgreSQL cannot store NUL in text, nor can UTF-8 hold a lone surrogate (an upstream's
        # reply may carry one): each is kept as U+FFFD, so that the turn is not lost
        user_text, reply = (as_unicode(t).replace("\x00", "\ufffd") for t in (self.user_text, reply))
        messages = (Message("user", user_text), Message("assistant", reply))
        return Turn(
            self.scope,
            messages,
            conversation_id=self.conversation_id,
            automation=self.automation,
            id=self.turn_id,
            began=self.began,
        )


MAX_DEPTH = 64  # OpenAI's bodies nest a few levels; tool schemas a few more


def check_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ChatError(400, "the request body must be a JSON object")
    _check_json(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise ChatError(400, "'messages' must be a non-empty list of message objects", param="messages")
    for field, kind, what in (("model", str, "a string"), ("stream", bool, "true or false")):
        if body.get(field) is not None and not isinstance(body[field], kind):
            raise ChatError(400, f"'{field}' must be {what}", param=field)
    return body


def _check_json(body: dict[str, Any]) -> None:
    """Every text of the body valid Unicode, and the body no deeper than MAX_DEPTH: JSON accepts
    a lone surrogate ("\\ud800"), which no model, tokenizer or UTF-8 encoder takes, and a deep
    body would exhaust the stack of whatever walks it next. Walked without recursion."""
    pending: list[tuple[Any, int, str]] = [(body, 1, "body")]
    while pending:
        value, depth, where = pending.pop()
        if isinstance(value, str):
            if not is_unicode(value):
                raise ChatError(400, f"{where} is not valid Unicode (it holds a lone surrogate)", param=where)
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise ChatError(400, f"the request body nests more than {MAX_DEPTH} levels deep")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and not is_unicode(key):
                raise ChatError(400, f"a key in {where} is not valid Unicode", param=where)
            pending.append((item, depth + 1, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"))


def conversation_of(headers: Mapping[str, str]) -> str:
    """The conversation a turn belongs to: X-Mnemo-Conversation (as /v1/turns takes one), or a
    new id."""
    given = headers.get(CONVERSATION_HEADER) or ""
    if not given.strip():
        return new_id()
    try:
        return conversation_id(given)
    except InvalidValue as exc:
        raise ChatError(400, f"X-Mnemo-Conversation: {exc}", param=CONVERSATION_HEADER) from None


def remember_of(headers: Mapping[str, str]) -> bool | None:
    """X-Mnemo-Remember: "off" (or false, no, 0) or "on" (true, yes, 1); None when not sent."""
    given = (headers.get(REMEMBER_HEADER) or "").strip().lower()
    if not given:
        return None
    if given in ("off", "false", "no", "0"):
        return False
    if given in ("on", "true", "yes", "1"):
        return True
    raise ChatError(400, f"{REMEMBER_HEADER}: say on or off, not {given[:40]!r}", param=REMEMBER_HEADER)


async def prepare(
    memory: Memory,
    accounts: Accounts,
    settings: Settings,
    user: User,
    body: dict[str, Any],
    headers: Mapping[str, str],
    via: RecallVia = RecallVia.PROXY,
) -> Prepared:
    began = memory.clock()
    agents = await accounts.agents(user.id)
    requested = body.get("model")
    agent = choose_agent(agents, headers.get(AGENT_HEADER), requested)
    model = upstream_model(agent, requested, settings)
    messages = with_persona(body["messages"], agent)
    # what this turn may read and whether memory is on, decided once for the whole turn
    scope = Scope(user.id, agent.id if agent else None).visible_to(agents)
    memory_on = await accounts.memory_enabled(user)
    conversation = conversation_of(headers)
    if problem := refused_name(CONVERSATION_HEADER, conversation, user.gate):
        raise ChatError(400, problem, param=CONVERSATION_HEADER)

    latest = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    query = content_text(latest.get("content")) if latest else ""
    hits = []
    if query.strip():
        try:
            hits = await memory.recall(query, scope, memory_on=memory_on, via=via)
        except Exception:  # memory failing must not take the conversation down with it
            log.exception("recall failed; forwarding without a memory block")
    placement = settings.recall.placement
    remember = remember_of(headers)
    named = bool((headers.get(CONVERSATION_HEADER) or "").strip())
    return Prepared(
        body={**body, "model": model, "messages": inject(messages, render(hits, placement), placement)},
        scope=scope,
        hits=tuple(hits),
        conversation_id=conversation,
        automation=(headers.get(AUTOMATION_HEADER) or "").strip().lower() in ("true", "1", "yes"),
        memory_on=memory_on,
        user_text=query if query.strip() and messages[-1].get("role") == "user" else None,
        gate=user.gate,
        began=began,
        remember=remember,
        named=named,
        switched_off=remember is None and named and not await memory.remembers(user.id, conversation),
    )


def choose_agent(agents: list[Agent], header: str | None, model: Any) -> Agent | None:
    """X-Mnemo-Agent (id or name) first; else a `model` naming one of the user's agents; else the default."""
    if header:
        found = find_agent(agents, header)
        if found is None:
            raise ChatError(
                404,
                f"no agent {header!r} for this user (X-Mnemo-Agent takes an agent's id or name)",
                code="agent_not_found",
            )
        return found
    return next((a for a in agents if a.name == model), None) if isinstance(model, str) else None


def upstream_model(agent: Agent | None, requested: Any, settings: Settings) -> Any:
    """The model to ask upstream: an agent's name becomes its model; anything else passes through."""
    if requested and not (agent and requested == agent.name):
        return requested
    model = (agent.upstream_model if agent else None) or settings.upstream_model
    if not model:
        raise ChatError(
            400,
            "no model to forward to: name one in 'model', give the agent an upstream_model,"
            " or set MNEMO_UPSTREAM_MODEL",
            param="model",
        )
    return model


def with_persona(messages: list[dict[str, Any]], agent: Agent | None) -> list[dict[str, Any]]:
    """The agent's persona as the system message, only when the client sent none of its own:
    a client's system prompt is deliberate, and two would contradict each other."""
    if agent is None or not agent.persona:
        return messages
    if any(m.get("role") in SYSTEM_ROLES for m in messages):
        return messages
    return [{"role": "system", "content": agent.persona}, *messages]
