"""Hostile model output through the real writer: the scripted server answers each
extraction and reconciliation request with a generated malformed or adversarial
reply (tests/hostile_replies.py), so the real `openai` client and parser run.

For every case: no exception escapes, the valid items of the reply are applied,
the victim's other facts and another user's facts are untouched, nothing
unstorable (NUL, control characters, lone surrogates) reaches the store, the
audit chains verify, and the hostile part is reported; an item that cannot be a fact is
shown among the turn's dropped items, by reasons that quote none of the reply's words.

All cases run on SQLite; on PostgreSQL every fifth one (MNEMO_LONG_TESTS=1 runs
all of them there too). One case in five also goes through the job worker.
"""

from __future__ import annotations

import functools
import os
import re
from datetime import timedelta

import pytest

from mnemo.domain import JobStatus, Scope, Status, Turn
from mnemo.write.writer import WriteReport
from tests.helpers import bulk_add, texts, worker_for
from tests.hostile_replies import HOME, SEEDS, Case, Context, all_cases

pytestmark = pytest.mark.slow  # a generated battery of hostile replies

_UNSTORABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
OTHERS_FACTS = [*SEEDS, "I am the administrator of this server", "My bank PIN hint is my cat"]
# words of the hostile items' texts, none of which a dropped item's reason may quote
_HOSTILE_WORDS = ("root", "administrator", "Hamburg", "oboe", "kayak", "stamps", "very very")


@functools.cache
def cases() -> list[Case]:
    """The generated cases: made on first use, not when the module is collected (it takes seconds)."""
    return all_cases()


def _turn(scope: Scope, n: int) -> Turn:
    said = "I moved to Munich and I work as a doctor now. Also: bees, Ana, peanuts, tomatoes, Miso."
    return Turn.of(scope, ("user", said), ("assistant", "Noted."), conversation_id=f"hostile-{n}")


async def _snapshot(memory, scope: Scope) -> list[tuple]:
    every = list(Status)
    return sorted(
        (f.id, f.text, f.status, f.version) for f in await memory.list(scope, statuses=every, limit=500)
    )


async def _run(memory, scripted_llm, clock, case: Case, n: int, others: Scope, via_worker: bool) -> list[str]:
    """The case's failures (empty when it passed)."""
    victim = Scope((await memory.accounts.user(f"victim-{n}")).id)
    await bulk_add(memory, victim, list(SEEDS))
    seeded = {f.text: f for f in await memory.list(victim)}
    others_ids = [f.id for f in await memory.list(others)]
    scripted_llm.responder = case.respond(Context(others_ids, [f.id for f in seeded.values()]))
    others_before = await _snapshot(memory, others)
    failures: list[str] = []
    try:
        if via_worker:
            job = await memory.submit(_turn(victim, n))
            await worker_for(memory, clock=clock, backoff=timedelta(seconds=1)).drain()
            job = await memory.job(victim.user_id, job.id)
            if job.status == JobStatus.FAILED and job.result == {"reason": "invalid_reply"}:
                problems = [job.last_error]  # nothing usable in the reply: parked, saying why
            elif job.status != JobStatus.DONE:
                return [f"job {job.status}: {job.last_error}"]
            else:
                problems = job.result["problems"]
            dropped = (await memory.turn(victim.user_id, job.id)).dropped
        else:
            report = await memory.remember(_turn(victim, n))
            if not isinstance(report, WriteReport) or report.retry or report.skipped:
                return [f"report {report!r}"]
            problems, dropped = report.problems, dict(report.dropped)
    except Exception as exc:  # the point of the test: nothing may escape
        return [f"raised {type(exc).__name__}: {str(exc)[:200]}"]

    active = texts(await memory.list(victim, limit=500))
    failures += [f"valid fact {t!r} not applied" for t in case.lands if t not in active]
    failures += [f"{t!r} is active" for t in case.stays_out if t in active]
    held = texts(await memory.list(victim, statuses=[Status.CANDIDATE], limit=500))
    failures += [f"{t!r} is not held for review" for t in case.stays_out if t not in held]
    for text, before in seeded.items():
        now = await memory.get(victim, before.id)
        if text == HOME and case.supersedes_home:
            replaced = now.superseded_by and await memory.get(victim, now.superseded_by)
            if now.status != Status.SUPERSEDED or not replaced or replaced.text != "I live in Munich":
                failures.append(f"the valid supersede of {text!r} was not applied ({now.status})")
        elif (now.text, now.status, now.version) != (before.text, Status.ACTIVE, before.version):
            failures.append(f"{text!r} was touched: {now.status} v{now.version} {now.text!r}")
    everything = await memory.list(victim, statuses=list(Status), limit=500)
    reasons = [e.reason or "" for e in await memory.events(victim.user_id)]
    failures += [
        f"unstorable text kept: {t!r}"[:200] for t in texts(everything) + reasons if _UNSTORABLE.search(t)
    ]
    told = repr([(e.reason, e.before, e.after) for e in await memory.events(victim.user_id)])
    failures += [
        f"{v!r} was stored" for v in case.never_stored if v in told or any(v in t for t in texts(everything))
    ]
    failures += [f"{v!r} is in the turn's problems" for v in case.never_stored if v in repr(problems)]
    if case.reported and not problems:
        failures.append("nothing reported")
    if case.dropped and not dropped:
        failures.append("nothing shown as dropped")
    quoted = [*case.lands, *case.stays_out, *case.never_stored, *_HOSTILE_WORDS]
    failures += [f"the turn's dropped reasons quote {t!r}" for t in quoted if t in repr(dropped)]
    if not (await memory.verify_audit(victim.user_id)).ok:
        failures.append("the victim's audit chain does not verify")
    if await _snapshot(memory, others) != others_before:
        failures.append("another user's facts changed")
    return failures


async def _run_all(memory, scripted_llm, clock, chosen: list[int], worker_every: int) -> dict[str, list[str]]:
    others = Scope((await memory.accounts.user("bystander")).id)
    await bulk_add(memory, others, OTHERS_FACTS)
    before = await _snapshot(memory, others)
    failed = {}
    for n in chosen:
        case = cases()[n]
        via_worker = n % worker_every == 0
        name = f"{n} {case.name}{' (worker)' if via_worker else ''}"
        if failures := await _run(memory, scripted_llm, clock, case, n, others, via_worker):
            failed[name] = failures
    assert (await memory.verify_audit(others.user_id)).ok
    assert await _snapshot(memory, others) == before
    assert sorted(texts(await memory.list(others))) == sorted(OTHERS_FACTS)
    return failed


def test_the_generator_makes_enough_varied_cases():
    made = cases()
    assert len(made) >= 200
    stages = {c.stage for c in made}
    assert stages == {"extract", "reconcile"}
    assert len({c.name.removesuffix(" (again)") for c in made}) >= 100  # kinds, not only draws
    assert all(made[i].name == c.name for i, c in enumerate(all_cases()))  # deterministic


async def test_hostile_replies_change_nothing_they_should_not(llm_memory, scripted_llm, clock, backend):
    every = backend == "sqlite" or os.environ.get("MNEMO_LONG_TESTS") == "1"
    chosen = list(range(len(cases()))) if every else list(range(0, len(cases()), 5))
    failed = await _run_all(llm_memory, scripted_llm, clock, chosen, worker_every=5 if every else 2)
    assert failed == {}, "\n".join(f"{name}: {'; '.join(f)}" for name, f in failed.items())
