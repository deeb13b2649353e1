"""Review policy and per-turn limits: which operations apply now and which wait for a person."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..domain import Action, ReviewPolicy, SourceKind
from ..settings import WriteSettings
from .instructions import WHY as INSTRUCTION
from .instructions import reads_as_instruction
from .reconcile import CHANGES_EXISTING, Op

# refuse: dropped, the turn's problems say why (never the text)
Verdict = Literal["apply", "hold", "refuse"]
ASSISTANT_ONLY = "rests only on what the assistant said"
_NAMED = {
    Action.CREATE: "a new fact",
    Action.EDIT: "an edit",
    Action.SUPERSEDE: "a replacement",
    Action.RETRACT: "a retraction",
}


@dataclass(frozen=True, slots=True)
class Ruled:
    op: Op
    verdict: Verdict
    why: str | None = None


def rule(ops: Sequence[Op], policy: ReviewPolicy, limits: WriteSettings) -> list[Ruled]:
    """`hold` turns an operation into a candidate fact that a person approves or rejects.

    Whatever the policy, a fact must rest on something the person said: what rests only
    on the assistant's words (or on no message at all) is held for review, refused under
    `guarded`, and never reinforces a fact; a text that reads as an instruction to an
    assistant is held. The extractor never changes a pinned fact on its own, and no turn
    changes more than `max_changes_to_existing` existing facts: a pasted document or an
    injected instruction cannot rewrite memory wholesale.
    """
    out: list[Ruled] = []
    changed = 0
    for op in ops:
        kind = op.proposal.source.kind
        assistant_only = not op.proposal.from_user and kind != SourceKind.DOCUMENT
        if op.kind is Action.REINFORCE:
            if assistant_only:
                out.append(Ruled(op, "refuse", "a restatement refused: it " + ASSISTANT_ONLY))
            else:
                out.append(Ruled(op, "apply"))
            continue
        if assistant_only and policy == ReviewPolicy.GUARDED:
            named = _NAMED.get(op.kind, str(op.kind))
            out.append(Ruled(op, "refuse", f"{named} refused under the guarded policy: it {ASSISTANT_ONLY}"))
            continue
        if assistant_only:
            out.append(Ruled(op, "hold", ASSISTANT_ONLY))
            continue
        if reads_as_instruction(op.proposal.text):
            out.append(Ruled(op, "hold", INSTRUCTION))
            continue
        touches = op.kind in CHANGES_EXISTING
        if touches and op.target is not None and op.target.pinned:
            out.append(Ruled(op, "hold", "changes a pinned fact"))
            continue
        if touches:
            changed += 1
            if changed > limits.max_changes_to_existing:
                out.append(Ruled(op, "hold", "over the per-turn limit of changes to existing facts"))
                continue
        if policy == ReviewPolicy.REVIEW:
            out.append(Ruled(op, "hold", "review policy"))
        elif policy == ReviewPolicy.GUARDED and kind == SourceKind.DOCUMENT:
            out.append(Ruled(op, "hold", "from a document the user pasted"))
        elif policy == ReviewPolicy.GUARDED and op.proposal.confidence < limits.guarded_min_confidence:
            out.append(Ruled(op, "hold", "low confidence"))
        elif policy == ReviewPolicy.GUARDED and op.kind is Action.RETRACT:
            out.append(Ruled(op, "hold", "retraction under the guarded policy"))
        else:
            out.append(Ruled(op, "apply"))
    return out


def held_reason(why: str) -> str:
    """The reason a held candidate's creation records."""
    return f"held for review: {why}"
