"""The memories list: search, filters, paging, and adding one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from ..accounts import Accounts
from ..domain import MAX_TEXT, Agent, Category, Fact, InvalidInput, NotFound, Scope, StatusFilter
from ..memory import Memory
from .forms import PAGE_SIZE, choice, flag, number, text
from .render import page, redirect
from .routing import web_router
from .session import FormDep, Session, SessionDep, accounts_of, memory_of

router = web_router()

SEARCH_LIMIT = 200  # a search pages through at most this many of the best matches
_BATCH = 200


@dataclass
class Filters:
    q: str = ""
    agent: str = ""  # "" every agent, "default" the default assistant, else an agent's id
    status: StatusFilter = StatusFilter.ACTIVE
    category: Category | None = None
    pinned: str = ""  # "", "yes", "no"
    offset: int = 0
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, query: dict[str, str]) -> Filters:
        pinned = query.get("pinned", "")
        return cls(
            q=text(query, "q", 2000),
            agent=text(query, "agent", 100),
            status=choice(query.get("status"), StatusFilter, StatusFilter.ACTIVE) or StatusFilter.ACTIVE,
            category=choice(query.get("category"), Category),
            pinned=pinned if pinned in ("yes", "no") else "",
            offset=number(query.get("offset"), 0) or 0,
        )

    def url(self, **changes: object) -> str:
        values: dict[str, object] = {
            "q": self.q,
            "agent": self.agent,
            "status": "" if self.status == StatusFilter.ACTIVE else str(self.status),
            "category": str(self.category or ""),
            "pinned": self.pinned,
            "offset": self.offset or "",
        }
        values.update(changes)
        query = urlencode({k: v for k, v in values.items() if v not in ("", None, 0)})
        return "/memories" + (f"?{query}" if query else "")

    def url_at(self, offset: int) -> str:
        return self.url(offset=offset)

    def keep(self) -> Callable[[Fact], bool] | None:
        if self.category is None and not self.pinned:
            return None
        return lambda f: (
            (self.category is None or f.category == self.category)
            and (not self.pinned or f.pinned == (self.pinned == "yes"))
        )


async def scope_for(accounts: Accounts, session: Session, agent: str, problems: list[str]) -> Scope:
    """Everything the person owns, or what one assistant sees."""
    if agent == "default":
        return Scope(session.user.id)
    if agent:
        try:
            await accounts.agent(session.user.id, agent.lower())
            return Scope(session.user.id, agent.lower())
        except NotFound:
            problems.append("That agent does not exist (any more): showing every agent's memories.")
    return session.scope


async def _listed(memory: Memory, scope: Scope, filters: Filters) -> list[Fact]:
    """Up to PAGE_SIZE + 1 facts from the filters' offset (the extra one says there is more)."""
    want = PAGE_SIZE + 1
    keep = filters.keep()
    if filters.q:
        hits = await memory.search(filters.q, scope, limit=SEARCH_LIMIT)
        facts = [h.fact for h in hits if keep is None or keep(h.fact)]
        return facts[filters.offset : filters.offset + want]
    statuses = filters.status.statuses()
    if keep is None:
        return await memory.list(scope, statuses=statuses, limit=want, offset=filters.offset)
    # category and pin are not store filters: walk the list, keeping what matches
    found: list[Fact] = []
    skipped = at = 0
    while len(found) < want:
        batch = await memory.list(scope, statuses=statuses, limit=_BATCH, offset=at)
        at += len(batch)
        for fact in filter(keep, batch):
            if skipped < filters.offset:
                skipped += 1
            elif len(found) < want:
                found.append(fact)
        if len(batch) < _BATCH:
            break
    return found


async def render_list(
    request: Request,
    session: Session,
    *,
    form: dict[str, str] | None = None,
    error: str = "",
    status: int = 200,
) -> Response:
    memory = memory_of(request)
    filters = Filters.of(dict(request.query_params))
    accounts = accounts_of(request)
    agents = await accounts.agents(session.user.id)
    scope = await scope_for(accounts, session, filters.agent, filters.problems)
    facts = await _listed(memory, scope, filters)
    return page(
        request,
        "memories.html",
        status=status,
        section="memories",
        facts=facts[:PAGE_SIZE],
        more=len(facts) > PAGE_SIZE,
        filters=filters,
        agents=agents,
        agent_names=_names(agents),
        categories=list(Category),
        statuses=list(StatusFilter),
        form=form or {"text": "", "category": "other", "agent": "", "pinned": ""},
        error=error,
        max_text=MAX_TEXT,
        here=filters.url(),
        page_size=PAGE_SIZE,
    )


def _names(agents: list[Agent]) -> dict[str | None, str]:
    return {None: "Default assistant", **{a.id: a.name for a in agents}}


@router.get("/memories")
async def memories(request: Request, session: SessionDep) -> Response:
    return await render_list(request, session)


@router.post("/memories")
async def add(request: Request, session: SessionDep, form: FormDep) -> Response:
    memory = memory_of(request)
    typed = {
        "text": text(form, "text", MAX_TEXT + 1),
        "category": text(form, "category", 40),
        "agent": text(form, "agent", 100),
        "pinned": "on" if flag(form, "pinned") else "",
    }
    category = choice(typed["category"], Category)
    problem = ""
    if not typed["text"]:
        problem = "Write the memory first: the text is empty."
    elif len(typed["text"]) > MAX_TEXT:
        problem = f"That is longer than {MAX_TEXT} characters; a memory is one sentence or so."
    elif category is None:
        problem = "Choose one of the categories."
    if problem:
        return await render_list(request, session, form=typed, error=problem, status=422)
    assert category is not None  # else a problem was found above
    scope = Scope(session.user.id)
    if typed["agent"]:
        try:
            await accounts_of(request).agent(session.user.id, typed["agent"].lower())
        except NotFound:
            return await render_list(
                request, session, form=typed, error="That agent does not exist (any more).", status=422
            )
        scope = Scope(session.user.id, typed["agent"].lower())
    try:
        fact = await memory.add(scope, typed["text"], category=category, pinned=bool(typed["pinned"]))
    except InvalidInput as exc:
        return await render_list(request, session, form=typed, error=str(exc), status=422)
    if fact.version > 1:
        return redirect("/memories", f"You had that one already; it is now stated {fact.mentions} times.")
    return redirect("/memories", f"Remembered: “{fact.text}”.")
