"""Isolation as a property, on both backends.

Hypothesis interleaves writes, restatements, edits, retractions, restores,
purges, candidates held for review (approved, merged into an active twin, or
rejected), recalls and agent creation, change and deletion across 5 users, each with the
default agent, a custom agent and a private agent (changes are also tried with
another user's id and through deleted agents, and must fail with NotFound).
After every step, by the reference model in tests/isolation_model.py: every
view of every user lists exactly what the scope rule allows, and the default
agent's lexical and semantic arms find exactly its active facts; for the users
the step touched, so do the recency and pinned arms and list `as_of`, while
recall (live and `as_of`) and the person's search answer nothing else; their
own view and export hold exactly their facts, and the history of each fact the
step touched answers only the views that may read it, with only its own texts.
A purged fact keeps no text, nor does its history.
A leak fails with hypothesis's shortest sequence of steps that shows it, and
the wrong text names the owner and agent it belongs to.

One store per test; every example makes 5 users of its own in it, so the
examples before it are more material that must stay out. MNEMO_LONG_TESTS=1
runs many more examples, with fresh random seeds.
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from mnemo.batch.export import records
from mnemo.domain import Conflict, InvalidInput, NotFound, Scope
from mnemo.memory import Memory
from mnemo.settings import Settings
from tests.isolation_model import (
    ACTIVE,
    CANDIDATE,
    DEFAULT,
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

pytestmark = pytest.mark.slow  # property-based: many generated histories

USERS = 5
FAR = 1_000_000  # a k or limit above anything an example holds
_RUNS = itertools.count()  # each example's users get names of their own in the shared store

users = st.integers(0, USERS - 1)
picks = st.integers(0, 1_000)  # which fact, modulo how many there are (shrinks to the first)
views = st.sampled_from(VIEWS)
acting = st.sampled_from((*VIEWS, OWN))
# who acts on a fact: its owner (0) half the time, else the user that many places on
strangers = st.one_of(st.just(0), st.integers(1, USERS - 1))


class EmbeddedOnce:
    """The real embedder, each text embedded once: the checks ask the same queries every step."""

    def __init__(self, embedder) -> None:
        self.inner = embedder
        self.model_name = embedder.model_name
        self.dimensions = embedder.dimensions
        self._vectors: dict[str, np.ndarray] = {}

    async def embed(self, texts) -> np.ndarray:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, await self.inner.embed(missing), strict=True):
                self._vectors[text] = vector
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._vectors[text]
        return out

    async def embed_queries(self, texts) -> np.ndarray:
        return await self.embed(texts)  # the local model embeds both sides alike


def answered(items) -> dict[str, str]:
    """{id: text} of facts, hits or scored facts."""
    facts = [getattr(i, "fact", i) for i in items]
    return {f.id: f.text for f in facts}


def only(where: str, seen: dict[str, str], allowed: dict[str, str]) -> None:
    assert not leaks(seen, allowed), describe(where, seen, allowed)


def exactly(where: str, seen: dict[str, str], allowed: dict[str, str]) -> None:
    assert seen == allowed, describe(where, seen, allowed)


class Isolation(RuleBasedStateMachine):
    def __init__(self, runner: asyncio.Runner, memory: Memory) -> None:
        super().__init__()
        self.run = runner.run
        self.memory = memory
        self.store = memory.store
        run = next(_RUNS)
        names = [f"x{run}u{u}" for u in range(USERS)]
        self.world = World([self.run(memory.accounts.user(n)).id for n in names], names)
        # words every note of this example has, and no other example's: the lexical arm finds them all
        self.query = "Note kept by " + " ".join(names)
        self.touched: set[int] = set()  # users whose views the next check reads through and through
        self.reread: set[str] = set()  # facts whose history it reads in every view

    # -- whom a step acts as --------------------------------------------------

    def scope(self, user: int, view: str) -> Scope | None:
        """The scope of a view; for a slot with no live agent, its last deleted agent's
        (which must answer NotFound); None if the slot never had one."""
        uid = self.world.users[user]
        if view == OWN:
            return Scope(uid, all_agents=True)
        if view == DEFAULT:
            return Scope(uid)
        if agent := self.world.agent_of(user, view):
            return Scope(uid, agent.id)
        gone = self.world.deleted.get((user, view))
        return Scope(uid, gone[-1].id) if gone else None

    def live(self, user: int, view: str) -> bool:
        return view in (DEFAULT, OWN) or (user, view) in self.world.agents

    def pick(self, pick: int) -> FactRecord | None:
        facts = list(self.world.facts.values())
        return facts[pick % len(facts)] if facts else None

    def _touch(self, user: int, *fact_ids: str, agents: bool = False) -> None:
        """The step changed (or tried to change) these facts of the user, or, with `agents`,
        what its agents may read: all of its facts."""
        self.touched.add(user)
        self.reread |= {f.id for f in self.world.user_facts(user)} if agents else set(fact_ids)

    def refused(self, call, error: type[Exception] = NotFound) -> None:
        with pytest.raises(error):
            self.run(call)

    # -- agents ---------------------------------------------------------------

    @initialize(reads_default=st.lists(st.booleans(), min_size=USERS * 2, max_size=USERS * 2))
    def seed(self, reads_default):
        """Every user starts with a custom and a private agent and a note in each of the three
        views: from the first step on, every scope holds something that must stay out of the others."""
        for user in range(USERS):
            for slot, reads in zip(SLOTS, reads_default[user * 2 : user * 2 + 2], strict=True):
                self._create_agent(user, slot, reads)
            for view in VIEWS:
                self._add(user, view, pinned=view == DEFAULT)

    def _create_agent(self, user: int, slot: str, reads_default: bool) -> None:
        self.world.generation += 1
        name = f"{slot}{self.world.generation}"
        private = slot == "private"
        made = self.run(
            self.memory.accounts.create_agent(
                self.world.users[user], name, private=private, reads_default=reads_default
            )
        )
        self.world.agents[(user, slot)] = AgentRecord(made.id, name, private, reads_default)
        self._touch(user, agents=True)

    def _agent(self, pick: int, *, live: bool) -> tuple[int, str] | None:
        """A (user, slot) that holds a live agent (or, with live=False, that holds none)."""
        places = [(u, s) for u in range(USERS) for s in SLOTS if ((u, s) in self.world.agents) == live]
        return places[pick % len(places)] if places else None

    @rule(pick=picks, reads_default=st.booleans())
    def create_agent(self, pick, reads_default):
        if place := self._agent(pick, live=False):
            self._create_agent(*place, reads_default)

    @rule(pick=picks, private=st.booleans(), reads_default=st.booleans())
    def change_agent(self, pick, private, reads_default):
        if not (place := self._agent(pick, live=True)):
            return
        user = place[0]
        agent = self.world.agents[place]
        self.run(
            self.memory.accounts.update_agent(
                self.world.users[user], agent.id, private=private, reads_default=reads_default
            )
        )
        agent.private, agent.reads_default = private, reads_default
        self._touch(user, agents=True)

    @rule(pick=picks)
    def delete_agent(self, pick):
        if not (place := self._agent(pick, live=True)):
            return
        user = place[0]
        agent = self.world.agents.pop(place)
        _, gone = self.run(self.memory.delete_agent(self.world.users[user], agent.id))
        own = [
            f for f in self.world.facts.values() if f.agent_id == agent.id and f.status in (ACTIVE, CANDIDATE)
        ]
        assert gone == len(own), f"deleting {agent.name} retracted or rejected {gone}, not {len(own)}"
        for f in own:
            f.status = RETRACTED if f.status == ACTIVE else REJECTED
        self.world.deleted.setdefault(place, []).append(agent)
        self._touch(user, agents=True)

    @rule(pick=picks, intruder=users, change=st.booleans())
    def touch_anothers_agent(self, pick, intruder, change):
        if not (place := self._agent(pick, live=True)) or place[0] == intruder:
            return
        owner, agent = place[0], self.world.agents[place]
        intruder_id = self.world.users[intruder]
        if change:
            self.refused(
                self.memory.accounts.update_agent(intruder_id, agent.id, private=False, reads_default=True)
            )
        else:
            self.refused(self.memory.delete_agent(intruder_id, agent.id))
        self._touch(owner, agents=True)

    # -- facts ----------------------------------------------------------------

    @rule(user=users, view=views, pinned=st.booleans())
    def add(self, user, view, pinned):
        self._add(user, view, pinned)

    @rule(user=users, view=views)
    def hold(self, user, view):
        """A new fact held for review: a candidate that only approval makes active."""
        self._add(user, view, False, held=True)

    def _add(self, user: int, view: str, pinned: bool, *, held: bool = False) -> None:
        scope = self.scope(user, view)
        if scope is None:
            return
        text = self.world.new_text(user, scope.agent_id)
        if not self.live(user, view):
            self.refused(self.memory.add(scope, text, held=held))
            return
        fact = self.run(self.memory.add(scope, text, pinned=pinned, held=held))
        assert fact.id not in self.world.facts, f"adding {text!r} touched an existing fact"
        status = CANDIDATE if held else ACTIVE
        self.world.facts[fact.id] = FactRecord(fact.id, user, scope.agent_id, status, text, pinned)
        self._touch(user, fact.id)

    @rule(user=users, view=views, pick=picks)
    def restate(self, user, view, pick):
        """Say again what some note says (perhaps another user's, or another agent's): only an
        active note this assistant may read is reinforced; otherwise a new one is made."""
        said = self.pick(pick)
        scope = self.scope(user, view)
        if said is None or scope is None or said.purged:
            return
        if not self.live(user, view):
            self.refused(self.memory.add(scope, said.text))
            return
        same = {
            f.id
            for f in self.world.facts.values()
            if f.text == said.text and f.status == ACTIVE and self.world.may_read(user, view, f)
        }
        fact = self.run(self.memory.add(scope, said.text))
        if fact.id in self.world.facts:
            assert fact.id in same, f"restating as {view} of user {user} reinforced {fact.id}: {fact.text!r}"
        else:
            assert not same, f"restating as {view} of user {user} made a new fact beside {same}"
            self.world.facts[fact.id] = FactRecord(fact.id, user, scope.agent_id, ACTIVE, said.text, False)
        self._touch(user, fact.id)

    def _change(self, pick, stranger, view, needs: tuple[str, ...], call, *, revives: bool = False):
        """Try a change to a fact as a view of its owner or of another user: NotFound unless
        the view may read the fact; InvalidInput unless it is in a status the change needs
        (and is not purged), or when it `revives` a deleted agent's fact; Conflict when a
        restore would make a text active twice in its agent. The fact and the answer if it
        went through."""
        fact = self.pick(pick)
        if fact is None:
            return None
        actor = (fact.user + stranger) % USERS
        scope = self.scope(actor, view)
        if scope is None:
            return None
        self._touch(actor)
        self._touch(fact.user, fact.id)
        if not self.live(actor, view) or not self.world.may_read(actor, view, fact):
            self.refused(call(scope, fact))
            return None
        if fact.status not in needs or fact.purged or (revives and self.world.agent_deleted(fact)):
            self.refused(call(scope, fact), InvalidInput)
            return None
        if revives and fact.status != CANDIDATE and self.world.active_twin(fact):
            self.refused(call(scope, fact), Conflict)
            return None
        return fact, self.run(call(scope, fact))

    @rule(pick=picks, stranger=strangers, view=acting)
    def edit(self, pick, stranger, view):
        target = self.pick(pick)
        if target is None:
            return
        text = self.world.new_text(target.user, target.agent_id)
        edit = lambda s, f: self.memory.edit(s, f.id, text)  # noqa: E731
        if self._change(pick, stranger, view, (ACTIVE, CANDIDATE), edit):
            target.text = text
            target.texts.add(text)

    @rule(pick=picks, stranger=strangers, view=acting)
    def retract(self, pick, stranger, view):
        if done := self._change(pick, stranger, view, (ACTIVE,), lambda s, f: self.memory.retract(s, f.id)):
            done[0].status = RETRACTED

    @rule(pick=picks, stranger=strangers, view=acting)
    def restore(self, pick, stranger, view):
        restore = lambda s, f: self.memory.restore(s, f.id)  # noqa: E731
        if done := self._change(
            pick, stranger, view, (RETRACTED, REJECTED, SUPERSEDED), restore, revives=True
        ):
            done[0].status = ACTIVE

    @rule(pick=picks, stranger=strangers, view=acting)
    def approve(self, pick, stranger, view):
        """A candidate becomes active; when its text is active already in its agent, the active
        fact is reinforced instead and the candidate is closed as superseded by it."""
        fact = self.pick(pick)
        twin = self.world.active_twin(fact) if fact else None
        approve = lambda s, f: self.memory.approve(s, f.id)  # noqa: E731
        if done := self._change(pick, stranger, view, (CANDIDATE,), approve, revives=True):
            fact, answer = done
            if twin is not None:
                assert answer.id == twin.id, f"approving {fact.text!r} answered {answer.id}, not its twin"
                fact.status = SUPERSEDED
            else:
                assert answer.id == fact.id
                fact.status = ACTIVE

    @rule(pick=picks, stranger=strangers, view=acting)
    def reject(self, pick, stranger, view):
        if done := self._change(pick, stranger, view, (CANDIDATE,), lambda s, f: self.memory.reject(s, f.id)):
            done[0].status = REJECTED

    @rule(pick=picks, stranger=strangers, view=acting)
    def purge(self, pick, stranger, view):
        """Erase a fact's text everywhere; its owner still lists it, without text."""
        statuses = (ACTIVE, CANDIDATE, RETRACTED, REJECTED, SUPERSEDED)
        if done := self._change(pick, stranger, view, statuses, lambda s, f: self.memory.purge(s, f.id)):
            self.world.purge(done[0])
            self._touch(done[0].user, agents=True)  # its copies went with it

    @rule(user=users, view=views, pick=picks)
    def recall(self, user, view, pick):
        """Recall with the exact words of some note, perhaps another user's: the semantic and
        lexical arms find it first wherever it is, unless the scope keeps them from it."""
        probe = self.pick(pick)
        scope = self.scope(user, view)
        if probe is None or scope is None or probe.purged:
            return
        if not self.live(user, view):
            self.refused(self.memory.recall(probe.text, scope))
            return
        allowed = self.world.readable(user, view, active_only=True)
        hits = answered(self.run(self.memory.recall(probe.text, scope, limit=100)))
        only(f"recall {probe.text!r} as {view} of user {user}", hits, allowed)
        if probe.id in allowed:
            assert probe.id in hits, describe(f"recall {probe.text!r} as {view} of {user}", hits, allowed)

    # -- after every step -------------------------------------------------------

    @invariant()
    def every_view_answers_what_the_rule_allows(self):
        self.run(self.check())
        self.touched.clear()
        self.reread.clear()

    async def check(self) -> None:
        """Every view of every user, its reads run at once. A user the step touched gets every
        read path; the others get those that would show another user's notes leaking in."""
        w, memory, store = self.world, self.memory, self.store
        now = memory.clock()
        (vector,) = await memory.embedder.embed([self.query])
        model = memory.embedder.model_name
        reads = []  # (what, its answer to come, what the model allows, how to compare)
        for user in range(USERS):
            thorough = user in self.touched
            for view in w.views(user):
                scope, where = self.scope(user, view), f"as {view} of user {user}"
                every = {i: f"{t} [{w.facts[i].status}]" for i, t in w.readable(user, view).items()}
                active = w.readable(user, view, active_only=True)
                reads.append((f"list {where}", memory.list(scope, statuses=None, limit=FAR), every, "status"))
                if view != DEFAULT and not thorough:
                    continue
                reads += [
                    (f"semantic arm {where}", store.nearest(scope, vector, model, FAR), active, "exact"),
                    (f"lexical arm {where}", store.lexical(scope, self.query, FAR), active, "exact"),
                ]
                if not thorough:
                    continue
                pinned = {i: t for i, t in active.items() if w.facts[i].pinned}
                waiting = {i: t for i, t in every.items() if w.facts[i].status == CANDIDATE}
                review = memory.list(scope, statuses=[CANDIDATE], limit=FAR)
                since = now - timedelta(days=3650)
                reads += [
                    (f"review queue {where}", review, waiting, "status"),
                    (f"recency arm {where}", store.recent(scope, since, FAR), active, "exact"),
                    (f"pinned arm {where}", store.pinned(scope), pinned, "exact"),
                    (
                        f"list as_of {where}",
                        memory.list(scope, statuses=None, as_of=now, limit=FAR),
                        every,
                        "status",
                    ),
                    (f"recall {where}", memory.recall(self.query, scope, limit=FAR), active, "some"),
                    (f"recall as_of {where}", memory.recall(self.query, scope, as_of=now), active, "some"),
                    (f"search {where}", memory.search(self.query, scope, limit=1000), active, "some"),
                ]
        answers = await asyncio.gather(*(r[1] for r in reads))
        for (what, _, allowed, how), answer in zip(reads, answers, strict=True):
            if how == "status":
                exactly(what, {f.id: f"{f.text} [{f.status}]" for f in answer}, allowed)
            elif how == "exact":
                exactly(what, answered(answer), allowed)
            else:  # fused and cut to a budget: nothing else, and something if anything is allowed
                seen = answered(answer)
                only(what, seen, allowed)
                assert bool(seen) == bool(allowed), describe(what, seen, allowed)
        for user in sorted(self.touched):
            await self.check_own_view(user)
            await self.check_histories(user)

    async def check_own_view(self, user: int) -> None:
        w, memory = self.world, self.memory
        uid = w.users[user]
        own = w.readable(user, OWN)
        listed = answered(await memory.list(Scope(uid, all_agents=True), statuses=None, limit=FAR))
        exactly(f"list of user {user}'s own view", listed, own)
        exported = [r async for r in records(memory, memory.accounts, await memory.store.get_user(uid))]
        facts = {r["id"]: r["text"] for r in exported if r["type"] == "fact"}
        exactly(f"export of user {user}", facts, own)
        agents = {r["id"] for r in exported if r["type"] == "agent"}
        assert agents == {a.id for a in w.live_agents(user)}, f"export of user {user} lists agents {agents}"
        assert not [r for r in exported if r["type"] == "conversation"]
        for r in exported:
            if r["type"] == "fact":
                self.only_its_own_history(f"export of user {user}", r["id"], r["events"])
        # a deleted agent reads nothing, and neither does another user's agent
        other = w.agent_of((user + 1) % USERS, "custom")
        strangers = [gone[-1].id for (u, _), gone in w.deleted.items() if u == user and gone]
        strangers += [other.id] if other else []
        for agent_id in strangers:
            with pytest.raises(NotFound):
                await memory.list(Scope(uid, agent_id), statuses=None)

    async def check_histories(self, user: int) -> None:
        """History answers for a fact of the user's (one the step touched) only in the views
        that may read it."""
        w, memory = self.world, self.memory
        stranger = (user + 1) % USERS
        for fact in w.user_facts(user):
            if fact.id not in self.reread:
                continue
            for reader, view in [*((user, v) for v in (*w.views(user), OWN)), (stranger, OWN)]:
                scope = self.scope(reader, view)
                if w.may_read(reader, view, fact):
                    events = await memory.history(scope, fact.id)
                    self.only_its_own_history(f"history as {view} of {reader}", fact.id, events)
                else:
                    with pytest.raises(NotFound):
                        await memory.history(scope, fact.id)

    def only_its_own_history(self, where: str, fact_id: str, events) -> None:
        """Every event is the fact's own, and every text in it is one the fact had."""
        fact = self.world.facts[fact_id]
        allowed = {""} if fact.purged else fact.texts  # a purge leaves no text, in it or in its past
        for e in events:
            e = e if isinstance(e, dict) else {"fact_id": e.fact_id, "before": e.before, "after": e.after}
            assert e["fact_id"] == fact_id, f"{where}: {fact_id}'s history holds an event of {e['fact_id']}"
            for snapshot in (e["before"], e["after"]):
                text = (snapshot or {}).get("text")
                assert text is None or text in allowed, f"{where}: {fact_id}'s history holds {text!r}"


@pytest.fixture
def runner():
    """An event loop of the test's own: hypothesis runs examples synchronously."""
    with asyncio.Runner() as r:
        yield r


@pytest.fixture
def shared_memory(runner, make_store, embedder, tmp_path, clock):
    store = make_store(clock=clock)
    runner.run(store.open())
    yield Memory(store, EmbeddedOnce(embedder), None, settings=Settings(data_dir=tmp_path), clock=clock)
    runner.run(store.close())


def test_every_view_answers_only_what_the_scope_rule_allows(runner, shared_memory):
    run_state_machine_as_test(
        lambda: Isolation(runner, shared_memory), settings=examples(6, 60, steps=(20, 30))
    )
