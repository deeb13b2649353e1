"""The memories list: search, filters, paging, and adding one."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from ..accounts import Accounts
from ..domain import (
    MAX_TEXT,
    Agent,
    Category,
    Conflict,
    Fact,
    InvalidInput,
    NotFound,
    Scope,
    Status,
    StatusFilter,
)
from ..memory import Memory
from .forms import PAGE_SIZE, choice, fact_id, flag, number, text
from .render import local_path, page, plural, redirect
from .routing import web_router
from .session import FormDep, Session, SessionDep, accounts_of, memory_of

router = web_router()

SEARCH_LIMIT = 200  # a search pages through at most this many of the best matches
BULK_LIMIT = 200  # ticked memories one bulk action takes


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

    def pin(self) -> bool | None:
        return None if not self.pinned else self.pinned == "yes"

    def keep(self, fact: Fact) -> bool:
        """Whether a search hit passes the category and pin filters (a list asks the store)."""
        pin = self.pin()
        return (self.category is None or fact.category == self.category) and (
            pin is None or fact.pinned == pin
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


async def _listed(memory: Memory, scope: Scope, filters: Filters) -> tuple[list[Fact], int]:
    """Up to PAGE_SIZE + 1 facts from the filters' offset (the extra one says there is more),
    and how many match in all."""
    want = PAGE_SIZE + 1
    if filters.q:
        hits = await memory.search(filters.q, scope, limit=SEARCH_LIMIT)
        found = [h.fact for h in hits if filters.keep(h.fact)]
        return found[filters.offset : filters.offset + want], len(found)
    statuses, category, pinned = filters.status.statuses(), filters.category, filters.pin()
    listed = await memory.list(
        scope, statuses=statuses, category=category, pinned=pinned, limit=want, offset=filters.offset
    )
    return listed, await memory.count(scope, statuses=statuses, category=category, pinned=pinned)


async def _replacements(memory: Memory, session: Session, facts: list[Fact]) -> dict[str, Fact]:
    """The newer memory that replaced each superseded one (when the person can still see it)."""
    found = {}
    for fact in facts:
        if fact.status == Status.SUPERSEDED and fact.superseded_by:
            with contextlib.suppress(NotFound):
                found[fact.id] = await memory.get(session.scope, fact.superseded_by)
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
    facts, total = await _listed(memory, scope, filters)
    shown = facts[:PAGE_SIZE]
    return page(
        request,
        "memories.html",
        status=status,
        section="memories",
        facts=shown,
        total=total,
        replaced=await _replacements(memory, session, shown),
        now=memory.clock(),
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


async def each(apply: Callable[..., Awaitable[object]], scope: Scope, ids: list[str]) -> tuple[int, int]:
    """Apply a change to each ticked memory: how many it changed, and how many it left as they
    were (changed meanwhile, not in a state for it, not this person's, or not an id)."""
    done = skipped = 0
    for value in ids:
        try:
            await apply(scope, fact_id(value))
            done += 1
        except (NotFound, InvalidInput, Conflict):
            skipped += 1
    return done, skipped


@router.post("/memories/bulk")
async def bulk(request: Request, session: SessionDep, form: FormDep) -> Response:
    """Retract or approve the ticked memories, or ask to erase them (a page that says what goes)."""
    action = text(form, "action", 20)
    back = local_path(form.get("next"), "/memories")
    ids = list(dict.fromkeys(v for v in form.getlist("ids") if isinstance(v, str)))[:BULK_LIMIT]
    if action not in ("retract", "approve", "erase"):
        return redirect(back, "Choose retract, approve or erase.", kind="error")
    if not ids:
        return redirect(back, "Tick at least one memory first.", kind="error")
    if action == "erase":
        return redirect("/erase/memories?" + urlencode({"ids": ids}, doseq=True))
    memory = memory_of(request)
    done, skipped = await each(memory.retract if action == "retract" else memory.approve, session.scope, ids)
    said = f"{'Retracted' if action == 'retract' else 'Approved'} {plural(done, 'memory', 'memories')}."
    if skipped:
        waits = "active" if action == "retract" else "waiting for review"
        said += f" {plural(skipped, 'other was', 'others were')} left as they were (not {waits})."
    return redirect(back, said, kind="ok" if done else "error")
