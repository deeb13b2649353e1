"""A reference model of who may read which fact, written apart from mnemo's own rule.

The property tests of isolation (tests/core/test_isolation_property.py,
tests/mcp/test_isolation_mcp.py) drive mnemo through random interleavings and,
after each step, compare what every view answers with what this model allows.
It knows nothing of `mnemo.domain.readable_agent_keys`: it is the agent rule
(docs/how-it-works.md, "Recall") restated as plain Python over plain records.

Each fact's text names its owner and the agent it was written for ("Note 7 kept
by x3u1 via private2"), so a leak reads as the wrong owner in an answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

LONG = os.environ.get("MNEMO_LONG_TESTS") == "1"

DEFAULT = "default"  # the default agent (agent_id None)
SLOTS = ("custom", "private")  # the two other agents each user may have at a time
VIEWS = (DEFAULT, *SLOTS)  # the assistants that act for a user
OWN = "all"  # the person's own view of everything they own (Scope(all_agents=True))

ACTIVE, RETRACTED, CANDIDATE, REJECTED, SUPERSEDED = (
    "active",
    "retracted",
    "candidate",
    "rejected",
    "superseded",
)


def examples(default: int, long: int, *, steps: tuple[int, int] = (20, 30)) -> hypothesis_settings:
    """Hypothesis settings: a few derandomised examples by default (so CI is deterministic);
    many fresh random ones with MNEMO_LONG_TESTS=1. `steps`: at most this many steps of a
    state machine, by default and in the long form."""
    return hypothesis_settings(
        max_examples=long if LONG else default,
        stateful_step_count=steps[1] if LONG else steps[0],
        deadline=None,
        derandomize=not LONG,
        database=None,
        print_blob=LONG,
        suppress_health_check=list(HealthCheck),
    )


@dataclass
class AgentRecord:
    id: str
    name: str
    private: bool
    reads_default: bool


@dataclass
class FactRecord:
    id: str
    user: int
    agent_id: str | None
    status: str
    text: str
    pinned: bool
    texts: set[str] = field(default_factory=set)  # every text it ever had (its history's)
    purged: bool = False  # erased: no text left, in it or in its history

    def __post_init__(self) -> None:
        self.texts.add(self.text)


@dataclass
class World:
    """Users 0..n-1, their agents (at most one per slot at a time), and every fact."""

    users: list[str]  # user ids, by index
    names: list[str]  # user names, by index: the "kept by" in texts
    agents: dict[tuple[int, str], AgentRecord] = field(default_factory=dict)
    deleted: dict[tuple[int, str], list[AgentRecord]] = field(default_factory=dict)
    facts: dict[str, FactRecord] = field(default_factory=dict)
    notes: int = 0  # how many texts were made: the next text's number
    generation: int = 0  # how many agents were made: names stay unique

    # -- the rule -------------------------------------------------------------

    def live_agents(self, user: int) -> list[AgentRecord]:
        return [a for (u, _), a in self.agents.items() if u == user]

    def agent_of(self, user: int, view: str) -> AgentRecord | None:
        return self.agents.get((user, view))

    def may_read(self, user: int, view: str, fact: FactRecord) -> bool:
        """The agent rule. `view` is DEFAULT, a slot (which must hold a live agent) or OWN."""
        if fact.user != user:
            return False  # another user's facts: never
        if view == OWN:
            return True
        if view == DEFAULT:
            if fact.agent_id is None:
                return True
            owner = next((a for a in self.live_agents(user) if a.id == fact.agent_id), None)
            return owner is not None and not owner.private
        agent = self.agents[(user, view)]
        return fact.agent_id == agent.id or (fact.agent_id is None and agent.reads_default)

    def readable(self, user: int, view: str, *, active_only: bool = False) -> dict[str, str]:
        """{fact id: text} of what `view` of `user` may read."""
        return {
            f.id: f.text
            for f in self.facts.values()
            if self.may_read(user, view, f) and (not active_only or f.status == ACTIVE)
        }

    def views(self, user: int) -> list[str]:
        """The assistant views the user has now."""
        return [DEFAULT, *(s for s in SLOTS if (user, s) in self.agents)]

    def user_facts(self, user: int) -> list[FactRecord]:
        return [f for f in self.facts.values() if f.user == user]

    def agent_deleted(self, fact: FactRecord) -> bool:
        return fact.agent_id is not None and all(a.id != fact.agent_id for a in self.live_agents(fact.user))

    def purge(self, fact: FactRecord) -> None:
        """Erase a fact, and its agent's other facts that say the same (they go with it)."""
        for f in self.facts.values():
            if (f.user, f.agent_id, f.text) == (fact.user, fact.agent_id, fact.text) and not f.purged:
                f.status = {ACTIVE: RETRACTED, CANDIDATE: REJECTED}.get(f.status, f.status)
                f.purged = True
        for f in self.facts.values():
            if f.purged:
                f.text = ""

    def active_twin(self, fact: FactRecord) -> FactRecord | None:
        """Another active fact of the same user and agent with the same text (one text is active
        once per agent: restoring this fact would be refused, approving it merges into the twin)."""
        return next(
            (
                f
                for f in self.facts.values()
                if f.id != fact.id
                and (f.user, f.agent_id, f.text, f.status) == (fact.user, fact.agent_id, fact.text, ACTIVE)
            ),
            None,
        )

    # -- texts ----------------------------------------------------------------

    def label(self, agent_id: str | None, user: int) -> str:
        if agent_id is None:
            return DEFAULT
        gone = [a for (u, _), agents in self.deleted.items() if u == user for a in agents]
        for a in [*self.live_agents(user), *gone]:
            if a.id == agent_id:
                return a.name
        raise AssertionError(f"no agent {agent_id} in the model")

    def new_text(self, user: int, agent_id: str | None) -> str:
        self.notes += 1
        return f"Note {self.notes} kept by {self.names[user]} via {self.label(agent_id, user)}"


def leaks(seen: dict[str, str], allowed: dict[str, str]) -> dict[str, str]:
    """What was answered that the rule does not allow (a wrong id, or the right id with a
    text it does not have)."""
    return {i: t for i, t in seen.items() if allowed.get(i) != t}


def describe(where: str, seen: dict[str, str], allowed: dict[str, str]) -> str:
    extra = sorted(leaks(seen, allowed).values())
    missing = sorted(t for i, t in allowed.items() if i not in seen)
    return f"{where}: answered {len(seen)}; not allowed {extra}; allowed but missing {missing}"
