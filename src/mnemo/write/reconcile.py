"""Decide how new facts relate to existing ones; validate every reference the model makes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..domain import Action, Fact
from ..providers.base import ChatModel
from . import reconcile_prompt
from .extract import Proposal
from .parse import parse_items

# What learning may do with a new fact, in the audit log's words: create a fact of it, or
# edit, supersede, retract or reinforce the existing fact it names (the target).
OpKind = Literal[Action.CREATE, Action.EDIT, Action.SUPERSEDE, Action.RETRACT, Action.REINFORCE]
CHANGES_EXISTING: frozenset[OpKind] = frozenset({Action.EDIT, Action.SUPERSEDE, Action.RETRACT})

# The model answers in the prompt's words; this is what each one does. "noop" (the new fact
# adds nothing) reinforces the fact it repeats, or does nothing when it names none.
_KIND_OF: dict[reconcile_prompt.Word, OpKind] = {
    "add": Action.CREATE,
    "update": Action.EDIT,
    "supersede": Action.SUPERSEDE,
    "retract": Action.RETRACT,
    "noop": Action.REINFORCE,
    "end": Action.SUPERSEDE,  # with `ends`: the older fact ends now, the new one stands alone
}


@dataclass(frozen=True, slots=True)
class Op:
    kind: OpKind
    proposal: Proposal
    target: Fact | None = None  # None only for CREATE
    reason: str | None = None
    # a supersede that ends its target instead ("I'm back home" after "I'm in Lisbon this week"):
    # the target stays what was true until now, and the new fact replaces nothing
    ends: bool = False


@dataclass
class Reconciled:
    ops: list[Op] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def reconcile(chat: ChatModel, items: list[tuple[Proposal, list[Fact]]]) -> Reconciled:
    """One structured call for all new facts that have related existing facts.

    The model sees existing facts as short aliases (1, 2, 3…), never their ids;
    each reference it returns is checked against the aliases it was shown. A bad
    decision is dropped and reported; a new fact left without a valid decision
    is added, so that nothing learnt is lost silently.
    """
    aliases: dict[int, Fact] = {}
    alias_of: dict[str, int] = {}
    for _, related in items:
        for fact in related:
            if fact.id not in alias_of:
                alias_of[fact.id] = len(aliases) + 1
                aliases[alias_of[fact.id]] = fact
    existing = [
        (alias, fact.text, (fact.valid_from or fact.created_at).date().isoformat())
        for alias, fact in aliases.items()
    ]
    raw = await chat.complete_json(
        [
            {"role": "system", "content": reconcile_prompt.SYSTEM},
            {
                "role": "user",
                "content": reconcile_prompt.user_prompt([p.text for p, _ in items], existing),
            },
        ],
        schema=reconcile_prompt.Reconciliation.model_json_schema(),
        schema_name="reconciliation",
    )
    parsed = parse_items(raw, "decisions", reconcile_prompt.Decision, limit=4 * len(items))
    out = Reconciled(problems=[f"reconciliation: {p}" for p in parsed.problems])
    decided: set[int] = set()
    for d in parsed.items:
        if not 1 <= d.new <= len(items):
            out.problems.append(f"reconciliation: decision for unknown new fact N{d.new} dropped")
            continue
        if d.new in decided:
            out.problems.append(f"reconciliation: second decision for N{d.new} dropped")
            continue
        proposal = items[d.new - 1][0]
        kind = _KIND_OF[d.action]
        named = aliases.get(d.target) if d.target is not None else None
        if kind in CHANGES_EXISTING and named is None:
            out.problems.append(
                f"reconciliation: {d.action} of N{d.new} names unknown fact {d.target!r}; dropped"
            )
            continue
        decided.add(d.new)
        if kind is Action.REINFORCE:
            # already known: count the restatement on the fact it repeats (if it named one)
            if named is not None:
                out.ops.append(Op(kind, proposal, named, d.reason or "restated"))
        elif kind is Action.CREATE:
            out.ops.append(Op(kind, proposal, reason=d.reason))
        else:
            out.ops.append(Op(kind, proposal, named, d.reason, ends=d.action == "end"))
    for number, (proposal, _) in enumerate(items, start=1):
        if number not in decided:
            out.problems.append(f"reconciliation: no valid decision for N{number}; added")
            out.ops.append(Op(Action.CREATE, proposal, reason="no valid decision from the model"))
    return out
