"""The reconciliation prompt: how each new fact relates to what memory already holds."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, StrictInt

VERSION = "reconcile-2026-12-6"

SYSTEM = """\
You maintain a long-term memory of facts about one person. New facts were just \
learnt from a conversation. For each new fact, decide how it relates to the \
existing facts shown with it, which were found as possibly related.

Actions:
- "add": the new fact is new information; keep everything existing as is.
- "update": the new fact corrects or refines the SAME fact as existing fact \
`target` (a typo, more detail, a wrong value) — it was never true as stored.
- "supersede": the world changed: the new fact replaces existing fact `target`, \
which was true until now (moved city, new job, ended relationship).
- "retract": the new fact says existing fact `target` is no longer true and \
nothing replaces it; the new fact itself is not kept.
- "end": the new fact says that a passing situation in existing fact `target` is \
over ("I'm back home" after "I'm in Lisbon this week", "my sister went home" after \
"my sister stays with us"): that fact was true until now and ends; the new fact is \
kept too. A lasting change of the same thing (a new home, a new job) is "supersede".
- "noop": the new fact adds nothing: existing fact `target` already says it.

Refer to existing facts only by the numbers shown. One decision per new fact. \
When unsure, choose "add".

Answer with JSON only, shaped {"decisions": [{"new": <new fact number>, \
"action": "...", "target": <existing fact number or null>, "reason": "..."}]}."""


# what the model may answer for each new fact (the words of SYSTEM above)
Word = Literal["add", "update", "supersede", "retract", "noop", "end"]


class Decision(BaseModel):
    # references are JSON integers, nothing that merely converts to one: `true` is not
    # fact 1, nor are "2" or 2.0 fact 2 (a raw id, or text, is no alias at all)
    new: StrictInt
    action: Word
    target: StrictInt | None = None
    # a decision whose reason is not a short text is malformed, and dropped like any other:
    # a change to existing memory is applied only when the whole decision is sound
    reason: str | None = Field(default=None, max_length=500)


class Reconciliation(BaseModel):
    decisions: list[Decision]


def user_prompt(new_facts: list[str], existing: list[tuple[int, str, str]]) -> str:
    lines = ["Existing facts:"]
    lines += [f"{alias}. {text} (since {since})" for alias, text, since in existing]
    lines += ["", "New facts:"]
    lines += [f"N{i}. {text}" for i, text in enumerate(new_facts, start=1)]
    return "\n".join(lines)
