"""Review policy and per-turn limits: which operations apply now and which wait for a person."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..domain import Action, ReviewPolicy, SourceKind
from ..settings import WriteSettings
from .reconcile import CHANGES_EXISTING, Op

Verdict = Literal["apply", "hold"]


@dataclass(frozen=True, slots=True)
class Ruled:
    op: Op
    verdict: Verdict
    why: str | None = None


def rule(ops: Sequence[Op], policy: ReviewPolicy, limits: WriteSettings) -> list[Ruled]:
    """`hold` turns an operation into a candidate fact that a person approves or rejects.

    Whatever the policy, the extractor never changes a pinned fact on its own, and
    no turn changes more than `max_changes_to_existing` existing facts: a pasted
    document or an injected instruction cannot rewrite memory wholesale.
    """
    out: list[Ruled] = []
    changed = 0
    for op in ops:
        if op.kind is Action.REINFORCE:
            out.append(Ruled(op, "apply"))
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
        elif policy == ReviewPolicy.GUARDED and op.proposal.source.kind == SourceKind.DOCUMENT:
            out.append(Ruled(op, "hold", "from a document the user pasted"))
        elif policy == ReviewPolicy.GUARDED and not op.proposal.from_user:
            out.append(Ruled(op, "hold", "not said by the user"))
        elif policy == ReviewPolicy.GUARDED and op.proposal.confidence < limits.guarded_min_confidence:
            out.append(Ruled(op, "hold", "low confidence"))
        elif policy == ReviewPolicy.GUARDED and op.kind is Action.RETRACT:
            out.append(Ruled(op, "hold", "retraction under the guarded policy"))
        else:
            out.append(Ruled(op, "apply"))
    return out
