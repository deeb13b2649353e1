"""Isolation through the faces of a real server: the HTTP API and the MCP tools, on both backends.

Hypothesis draws a sequence of steps — notes written over HTTP and through
`remember` (held for review under the review policy), edits, retractions (HTTP
and `forget`), restores, purges, approvals and rejections, recalls, agents
made, changed and deleted — for 3 users, each with their own key, the default
agent, a custom and a private agent; steps are also tried with another user's
key and through agents that are gone. After every step, each user's list (own
view and each agent's, HTTP and `list_memories`), review queue, search (HTTP),
`recall` (per agent) and the web page's export (signed in with the key) answer
only what the scope rule allows (tests/isolation_model.py), and the histories of
the notes the step touched answer only their owner's views (a purged note's
without any text).
The core property (tests/core/test_isolation_property.py) runs many more steps
without the server; here the point is that the faces add no way around it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from contextlib import AsyncExitStack
from typing import Any

import httpx2
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.isolation_model import (
    ACTIVE,
    CANDIDATE,
    DEFAULT,
    LONG,
    OWN,
    REJECTED,
    RETRACTED,
    SLOTS,
    SUPERSEDED,
    VIEWS,
    AgentRecord,
    FactRecord,
    World,
    describe,
    examples,
    leaks,
)
from tests.mcp.conftest import over_http
from tests.server.conftest import ADMIN_KEY

pytestmark = pytest.mark.slow  # property-based, through a real server

USERS = 3
_RUNS = itertools.count()

users = st.integers(0, USERS - 1)
picks = st.integers(0, 1_000)
views = st.sampled_from(VIEWS)
strangers = st.one_of(st.just(0), st.integers(1, USERS - 1))
steps = st.one_of(
    st.tuples(st.just("add over HTTP"), users, views),
    st.tuples(st.just("remember"), users, views),
    st.tuples(st.just("restate with remember"), users, views, picks),
    st.tuples(st.just("edit over HTTP"), picks, strangers),
    st.tuples(st.just("retract over HTTP"), picks, strangers),
    st.tuples(st.just("forget"), picks, strangers, st.sampled_from((OWN, *SLOTS))),
    st.tuples(st.just("restore over HTTP"), picks, strangers),
    st.tuples(st.just("purge over HTTP"), picks, strangers),
    st.tuples(st.just("review policy"), users, st.booleans()),
    st.tuples(st.just("approve over HTTP"), picks, strangers),
    st.tuples(st.just("reject over HTTP"), picks, strangers),
    st.tuples(st.just("recall"), users, views, picks),
    st.tuples(st.just("create agent"), picks, st.booleans()),
    st.tuples(st.just("change agent"), picks, st.booleans(), st.booleans()),
    st.tuples(st.just("delete agent"), picks),
)


def texts(items: list[dict]) -> dict[str, str]:
    return {i["id"]: i["text"] for i in (item.get("fact", item) for item in items)}


def with_status(items: list[dict]) -> dict[str, str]:
    return {i["id"]: f"{i['text']} [{i['status']}]" for i in items}


class Faces:
    """One example: fresh users on the shared server, their clients and MCP sessions, the model."""

    def __init__(self, server, stack: AsyncExitStack) -> None:
        self.server = server
        self.stack = stack
        self.http: list[httpx2.AsyncClient] = []
        self.keys: list[str] = []
        self.mcp: list[Any] = []
        self.touched: set[str] = set()
        self.reviewing: set[int] = set()  # users whose policy is "review": remember holds

    async def start(self) -> None:
        run = next(_RUNS)
        names = [f"y{run}u{u}" for u in range(USERS)]
        ids = []
        async with httpx2.AsyncClient(base_url=self.server.base_url, timeout=30) as admin:
            for name in names:
                made = await admin.post(
                    "/v1/admin/users", json={"name": name}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
                )
                assert made.status_code == 201, made.text
                ids.append(made.json()["user"]["id"])
                self.keys.append(made.json()["key"]["token"])
        self.world = World(ids, names)
        self.query = "Note kept by " + " ".join(names)
        for key in self.keys:
            headers = {"Authorization": f"Bearer {key}"}
            client = httpx2.AsyncClient(base_url=self.server.base_url, headers=headers, timeout=30)
            self.http.append(await self.stack.enter_async_context(client))
            self.mcp.append(await self.stack.enter_async_context(over_http(self.server.base_url, key)))
        for user in range(USERS):
            for slot in SLOTS:
                await self.create_agent(user, slot, reads_default=slot == "private")
            for view in VIEWS:
                await self._add_over_http(user, view)

    # -- helpers ----------------------------------------------------------------

    def agent_ref(self, user: int, view: str) -> tuple[str | None, bool]:
        """The agent id a view names (None: the default agent), and whether it is live; a slot
        with no live agent names its last deleted one."""
        if view == DEFAULT:
            return None, True
        if agent := self.world.agent_of(user, view):
            return agent.id, True
        gone = self.world.deleted.get((user, view))
        return (gone[-1].id if gone else None), False

    def pick(self, pick: int) -> FactRecord | None:
        facts = list(self.world.facts.values())
        return facts[pick % len(facts)] if facts else None

    async def tool(self, user: int, name: str, **arguments: Any) -> tuple[bool, Any]:
        """(ok, structured result or error text) of a tool call as the user's default assistant."""
        result = await self.mcp[user].call_tool(name, arguments)
        return (not result.is_error, result.content[0].text if result.is_error else result.structured_content)

    # -- steps ------------------------------------------------------------------

    async def step(self, kind: str, *args) -> None:
        await getattr(self, "_" + kind.lower().replace(" ", "_"))(*args)

    async def create_agent(self, user: int, slot: str, reads_default: bool) -> None:
        self.world.generation += 1
        name = f"{slot}{self.world.generation}"
        private = slot == "private"
        body = {"name": name, "private": private, "reads_default": reads_default}
        made = await self.http[user].post("/v1/agents", json=body)
        assert made.status_code == 201, made.text
        self.world.agents[(user, slot)] = AgentRecord(made.json()["id"], name, private, reads_default)
        self.touched |= {f.id for f in self.world.user_facts(user)}

    def _place(self, pick: int, *, live: bool) -> tuple[int, str] | None:
        places = [(u, s) for u in range(USERS) for s in SLOTS if ((u, s) in self.world.agents) == live]
        return places[pick % len(places)] if places else None

    async def _create_agent(self, pick: int, reads_default: bool) -> None:
        if place := self._place(pick, live=False):
            await self.create_agent(*place, reads_default)

    async def _change_agent(self, pick: int, private: bool, reads_default: bool) -> None:
        if not (place := self._place(pick, live=True)):
            return
        agent = self.world.agents[place]
        body = {"private": private, "reads_default": reads_default}
        changed = await self.http[place[0]].patch(f"/v1/agents/{agent.id}", json=body)
        assert changed.status_code == 200, changed.text
        agent.private, agent.reads_default = private, reads_default
        self.touched |= {f.id for f in self.world.user_facts(place[0])}

    async def _delete_agent(self, pick: int) -> None:
        if not (place := self._place(pick, live=True)):
            return
        user = place[0]
        agent = self.world.agents.pop(place)
        # another user's key cannot delete it
        stranger = self.http[(user + 1) % USERS]
        assert (await stranger.delete(f"/v1/agents/{agent.id}")).status_code == 404
        deleted = await self.http[user].delete(f"/v1/agents/{agent.id}")
        assert deleted.status_code == 200, deleted.text
        own = [
            f for f in self.world.facts.values() if f.agent_id == agent.id and f.status in (ACTIVE, CANDIDATE)
        ]
        assert deleted.json()["retracted"] == len(own)  # its candidates are rejected, and counted
        for f in own:
            f.status = RETRACTED if f.status == ACTIVE else REJECTED
        self.world.deleted.setdefault(place, []).append(agent)
        self.touched |= {f.id for f in self.world.user_facts(user)}

    async def _add_over_http(self, user: int, view: str) -> None:
        agent_id, live = self.agent_ref(user, view)
        if view != DEFAULT and agent_id is None:
            return
        text = self.world.new_text(user, agent_id)
        answer = await self.http[user].post("/v1/memories", json={"text": text, "agent_id": agent_id})
        if not live:
            assert answer.status_code == 404, answer.text
            return
        assert answer.status_code == 201, answer.text
        self.world.facts[answer.json()["id"]] = FactRecord(
            answer.json()["id"], user, agent_id, ACTIVE, text, False
        )
        self.touched.add(answer.json()["id"])

    async def _remember(self, user: int, view: str, said: FactRecord | None = None) -> None:
        agent_id, live = self.agent_ref(user, view)
        if view != DEFAULT and agent_id is None:
            return
        text = said.text if said else self.world.new_text(user, agent_id)
        ok, answer = await self.tool(user, "remember", text=text, agent=agent_id)
        if not live:
            assert not ok and "has no agent" in answer, answer
            return
        assert ok, answer
        fact = answer["memory"]
        status = CANDIDATE if user in self.reviewing else ACTIVE  # a restatement reinforces its like
        same = {
            f.id
            for f in self.world.facts.values()
            if f.text == text and f.status == status and self.world.may_read(user, view, f)
        }
        if fact["id"] in self.world.facts:
            assert fact["id"] in same, f"remember as {view} of user {user} reinforced {fact}"
        else:
            assert not same, f"remember as {view} of user {user} made a new note beside {same}"
            self.world.facts[fact["id"]] = FactRecord(fact["id"], user, agent_id, status, text, False)
        self.touched.add(fact["id"])

    async def _restate_with_remember(self, user: int, view: str, pick: int) -> None:
        if (said := self.pick(pick)) and not said.purged:
            await self._remember(user, view, said)

    async def _review_policy(self, user: int, review: bool) -> None:
        policy = "review" if review else "auto"
        answer = await self.http[user].patch("/v1/me/settings", json={"review_policy": policy})
        assert answer.status_code == 200, answer.text
        (self.reviewing.add if review else self.reviewing.discard)(user)

    async def _over_http(
        self, pick: int, stranger: int, needs: tuple[str, ...], request, *, revives: bool = False
    ) -> tuple[FactRecord, dict] | None:
        """A change with the owner's key (its own view) or another user's: 404 for another
        user's; 422 unless the note is in a status the change needs (and not purged), or when
        it `revives` a deleted agent's note; 409 when a restore would make a text active twice
        in its agent. The note and the answer if it went through."""
        fact = self.pick(pick)
        if fact is None:
            return None
        self.touched.add(fact.id)
        actor = (fact.user + stranger) % USERS
        answer = await request(self.http[actor], fact)
        if actor != fact.user:
            assert answer.status_code == 404, answer.text
            return None
        if fact.status not in needs or fact.purged or (revives and self.world.agent_deleted(fact)):
            assert answer.status_code == 422, answer.text
            return None
        if revives and fact.status != CANDIDATE and self.world.active_twin(fact):
            assert answer.status_code == 409, answer.text
            return None
        assert answer.status_code == 200, answer.text
        return fact, answer.json()

    async def _edit_over_http(self, pick: int, stranger: int) -> None:
        target = self.pick(pick)
        if target is None:
            return
        text = self.world.new_text(target.user, target.agent_id)
        version = (await self.http[target.user].get(f"/v1/memories/{target.id}")).json()["version"]
        body = {"text": text, "version": version}
        if await self._over_http(
            pick, stranger, (ACTIVE, CANDIDATE), lambda c, f: c.patch(f"/v1/memories/{f.id}", json=body)
        ):
            target.text = text
            target.texts.add(text)

    async def _retract_over_http(self, pick: int, stranger: int) -> None:
        if done := await self._over_http(
            pick, stranger, (ACTIVE,), lambda c, f: c.delete(f"/v1/memories/{f.id}")
        ):
            done[0].status = RETRACTED

    async def _restore_over_http(self, pick: int, stranger: int) -> None:
        restore = lambda c, f: c.post(f"/v1/memories/{f.id}/restore")  # noqa: E731
        if done := await self._over_http(
            pick, stranger, (RETRACTED, REJECTED, SUPERSEDED), restore, revives=True
        ):
            done[0].status = ACTIVE

    async def _purge_over_http(self, pick: int, stranger: int) -> None:
        purge = lambda c, f: c.delete(f"/v1/memories/{f.id}", params={"purge": "true"})  # noqa: E731
        statuses = (ACTIVE, CANDIDATE, RETRACTED, REJECTED, SUPERSEDED)
        if done := await self._over_http(pick, stranger, statuses, purge):
            self.world.purge(done[0])
            self.touched |= {f.id for f in self.world.user_facts(done[0].user)}  # its copies went with it

    async def _approve_over_http(self, pick: int, stranger: int) -> None:
        """A candidate becomes active, or, when its text is active already in its agent, the
        active note is reinforced and answered, and the candidate closed as superseded by it."""
        fact = self.pick(pick)
        twin = self.world.active_twin(fact) if fact else None
        approve = lambda c, f: c.post(f"/v1/review/{f.id}/approve")  # noqa: E731
        if done := await self._over_http(pick, stranger, (CANDIDATE,), approve, revives=True):
            fact, answer = done
            assert answer["id"] == (twin.id if twin else fact.id), answer
            fact.status = SUPERSEDED if twin else ACTIVE
            self.touched |= {twin.id} if twin else set()

    async def _reject_over_http(self, pick: int, stranger: int) -> None:
        reject = lambda c, f: c.post(f"/v1/review/{f.id}/reject")  # noqa: E731
        if done := await self._over_http(pick, stranger, (CANDIDATE,), reject):
            done[0].status = REJECTED

    async def _forget(self, pick: int, stranger: int, view: str) -> None:
        """`forget` as the person's assistant (it sees all they own) or bound to one of their
        agents by X-Mnemo-Agent (it sees what that agent sees)."""
        fact = self.pick(pick)
        if fact is None:
            return
        actor = (fact.user + stranger) % USERS
        agent = self.world.agent_of(actor, view) if view != OWN else None
        if view != OWN and agent is None:
            return
        self.touched.add(fact.id)
        headers = {"X-Mnemo-Agent": agent.id} if agent else {}
        async with over_http(self.server.base_url, self.keys[actor], **headers) as session:
            result = await session.call_tool("forget", {"id": fact.id, "reason": "property test"})
        if not self.world.may_read(actor, view, fact):
            assert result.is_error and result.content[0].text == f"No memory with id {fact.id}.", result
        elif fact.purged:
            assert result.is_error and "was purged" in result.content[0].text, result
        elif fact.status != ACTIVE:
            assert result.is_error and "cannot retract" in result.content[0].text, result
        else:
            assert not result.is_error, result.content
            fact.status = RETRACTED

    async def _recall(self, user: int, view: str, pick: int) -> None:
        """Recall with the words of some note, perhaps another user's."""
        agent_id, live = self.agent_ref(user, view)
        probe = self.pick(pick)
        if probe is None or probe.purged or (view != DEFAULT and agent_id is None):
            return
        ok, answer = await self.tool(user, "recall", query=probe.text, agent=agent_id, limit=50)
        if not live:
            assert not ok and "has no agent" in answer, answer
            return
        assert ok, answer
        allowed = self.world.readable(user, view, active_only=True)
        seen = texts(answer["memories"])
        assert not leaks(seen, allowed), describe(f"recall {probe.text!r} as {view} of {user}", seen, allowed)
        if probe.id in allowed:
            assert probe.id in seen, describe(f"recall {probe.text!r} as {view} of {user}", seen, allowed)

    # -- after every step ---------------------------------------------------------

    async def check(self) -> None:
        w = self.world
        reads = []  # (what, its answer to come, what the model allows, all of it or only it)
        for user in range(USERS):
            http, tool = self.http[user], self.tool
            every = {i: f"{t} [{w.facts[i].status}]" for i, t in w.readable(user, OWN).items()}
            waiting = {i: t for i, t in every.items() if w.facts[i].status == CANDIDATE}
            listing = {"status": "all", "limit": 200}
            exported = http.get("/export.jsonl", headers={"Cookie": f"mnemo_session={self.keys[user]}"})
            reads += [
                (f"GET /v1/memories of {user}", http.get("/v1/memories", params=listing), every, "all"),
                (f"GET /v1/review of {user}", http.get("/v1/review", params={"limit": 200}), waiting, "all"),
                (f"the web page's export of {user}", exported, every, "export"),
                (
                    f"list_memories of {user}",
                    tool(user, "list_memories", status="all", limit=200),
                    every,
                    "all",
                ),
            ]
            for view in w.views(user):
                agent_id, _ = self.agent_ref(user, view)
                every = {i: f"{t} [{w.facts[i].status}]" for i, t in w.readable(user, view).items()}
                active = w.readable(user, view, active_only=True)
                where = f"as {view} of {user}"
                body = {"query": self.query, "agent_id": agent_id, "limit": 100}
                recall = tool(user, "recall", query=self.query, agent=agent_id, limit=50)
                reads += [
                    (
                        f"POST /v1/memories/search {where}",
                        http.post("/v1/memories/search", json=body),
                        active,
                        "only",
                    ),
                    (f"recall {where}", recall, active, "only"),
                ]
                if view != DEFAULT:  # the default agent has no list of its own: its person's is above
                    listed = http.get("/v1/memories", params={**listing, "agent_id": agent_id})
                    tool_listed = tool(user, "list_memories", status="all", limit=200, agent=agent_id)
                    reads += [
                        (f"GET /v1/memories {where}", listed, every, "all"),
                        (f"list_memories {where}", tool_listed, every, "all"),
                    ]
        answers = await asyncio.gather(*(r[1] for r in reads))
        for (what, _, allowed, how), answer in zip(reads, answers, strict=True):
            if how == "export":  # JSON lines: the facts, with their events
                assert answer.status_code == 200, f"{what}: {answer.text}"
                items = [r for r in map(json.loads, answer.text.splitlines()) if r["type"] == "fact"]
                for item in items:
                    self.only_its_own_history(what, w.facts[item["id"]], item["events"])
                how = "all"
            elif isinstance(answer, tuple):  # a tool call
                ok, answer = answer
                assert ok, f"{what}: {answer}"
                items = answer["memories"]
            else:
                assert answer.status_code == 200, f"{what}: {answer.text}"
                items = answer.json()["items"]
            if how == "all":
                seen = with_status(items)
                assert seen == allowed, describe(what, seen, allowed)
            else:  # recalled: cut to a budget, so nothing else, and something if anything is allowed
                seen = texts(items)
                assert not leaks(seen, allowed), describe(what, seen, allowed)
                assert bool(seen) == bool(allowed), describe(what, seen, allowed)
        for fact_id in sorted(self.touched):
            await self.check_history(w.facts[fact_id])
        self.touched.clear()

    async def check_history(self, fact: FactRecord) -> None:
        """The owner's key reads the note's history, holding only its own texts; another user's
        key gets 404 over HTTP and 'No memory' from memory_history."""
        answer = await self.http[fact.user].get(f"/v1/memories/{fact.id}/history")
        assert answer.status_code == 200, answer.text
        self.only_its_own_history("history", fact, answer.json())
        stranger = (fact.user + 1) % USERS
        assert (await self.http[stranger].get(f"/v1/memories/{fact.id}/history")).status_code == 404
        ok, answer = await self.tool(stranger, "memory_history", id=fact.id)
        assert not ok and answer == f"No memory with id {fact.id}.", answer

    def only_its_own_history(self, where: str, fact: FactRecord, events: list[dict]) -> None:
        """Every event is the note's own, and holds only texts it had: none at all once purged."""
        allowed = {""} if fact.purged else fact.texts
        for event in events:
            assert event["fact_id"] == fact.id, f"{where}: {fact.id}'s history holds {event['fact_id']}'s"
            for snapshot in (event["before"], event["after"]):
                text = (snapshot or {}).get("text")
                assert text is None or text in allowed, f"{where}: {fact.id}'s history holds {text!r}"


async def run_example(server, plan) -> None:
    try:
        async with AsyncExitStack() as stack:
            faces = Faces(server, stack)
            await faces.start()
            await faces.check()
            for step in plan:
                await faces.step(*step)
                await faces.check()
    except BaseExceptionGroup as group:  # the MCP sessions' task groups wrap what failed: unwrap it
        failed: BaseException = group
        while isinstance(failed, BaseExceptionGroup):
            failed = failed.exceptions[0]
        raise failed from None


# Every step that changes a note's status, in an order that reaches each outcome at least once
# (notes 0-8 are the seeded ones, three per user; the later ones are numbered as they come).
REVIEWED = [
    ("review policy", 0, True),
    ("remember", 0, DEFAULT),  # note 9: a candidate
    ("restate with remember", 0, DEFAULT, 9),  # reinforces it
    ("review policy", 0, False),
    ("add over HTTP", 0, DEFAULT),  # note 10: active
    ("review policy", 0, True),
    ("restate with remember", 0, DEFAULT, 10),  # note 11: a candidate saying what note 10 says
    ("approve over HTTP", 11, 0),  # merged into note 10
    ("restore over HTTP", 11, 0),  # 409: note 10 says it
    ("approve over HTTP", 9, 0),
    ("remember", 0, "custom"),  # note 12: a candidate of user 0's custom agent
    ("reject over HTTP", 12, 0),
    ("restore over HTTP", 12, 0),
    ("purge over HTTP", 9, 1),  # 404: another user's
    ("purge over HTTP", 9, 0),
    ("restore over HTTP", 9, 0),  # 422: purged
    ("delete agent", 0),  # user 0's custom agent: note 12 is retracted
    ("restore over HTTP", 12, 0),  # 422: its agent is gone
]


def test_the_api_and_the_tools_answer_only_what_the_scope_rule_allows(server):
    @given(plan=st.lists(steps, min_size=6, max_size=20 if LONG else 10))
    @example(plan=REVIEWED)
    @examples(3, 30)
    def interleaving(plan):
        asyncio.run(run_example(server, plan))

    interleaving()
