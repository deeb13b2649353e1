"""Erasing a conversation, and the receipts of erasures: mnemo erase, mnemo receipts,
mnemo audit verify-receipt (a memory is erased with mnemo purge)."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import receipts as signing
from ..domain import InvalidInput, Receipt
from ..wording import plural
from . import output
from .admin import audit
from .options import Json
from .runtime import BAD_INPUT, CliFailure, Session, fail, global_user, run

erase = typer.Typer(
    help="Erase for good, with a signed receipt (a memory: mnemo purge).", no_args_is_help=True
)
receipts = typer.Typer(help="The signed receipts of your erasures.", no_args_is_help=True)

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Really erase it.")]


Erased = tuple[Receipt, str | None]  # the receipt, and why the text lingers in a file, if it does


async def erased(s: Session, receipt: Receipt) -> Erased:
    return receipt, await s.memory.lingering()


def _say_receipt(done: Erased, json: bool) -> None:
    receipt, lingering = done
    if json:
        output.emit_json({"id": receipt.id, **signing.document(receipt), "lingering": lingering})
        return
    counts = receipt.body["erased"]["counts"]
    shown = ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in counts.items() if n)
    output.say(f"Erased ({receipt.kind}): {shown or 'nothing left to erase'}", "green")
    output.say(f"Receipt: {receipt.id} (mnemo receipts show {receipt.id})")
    output.lingering(lingering)


@erase.command("conversation")
def erase_conversation(
    ctx: typer.Context,
    conversation_id: Annotated[str, typer.Argument(metavar="ID", help="The conversation's id.")],
    with_memories: Annotated[
        bool, typer.Option("--with-memories", help="Erase the memories learnt from it too.")
    ] = False,
    yes: Yes = False,
    json: Json = False,
) -> None:
    """Remove a conversation, its messages, its queued turns and its backfill marks for good;
    its words are never learnt again."""

    async def work(s: Session) -> Erased:
        if not yes:
            plan = await s.memory.conversation_erasure_plan(s.user.id, conversation_id)
            learnt = len(plan.cited_by)
            offer = (
                f"the {plural(learnt, 'memory')} learnt from it go with it (--with-memories)"
                if with_memories
                else f"the {plural(learnt, 'memory')} learnt from it stay (--with-memories erases them)"
            )
            raise CliFailure(
                f"Not erased. Erasing removes conversation {conversation_id!r} and all its messages for "
                f"good; {offer}. It cannot be undone. Run again with --yes to erase."
            )
        return await erased(
            s, await s.memory.erase_conversation(s.user.id, conversation_id, with_facts=with_memories)
        )

    _say_receipt(run(ctx, work, resolve_agent=False), json)


@erase.command("everything")
def erase_everything(ctx: typer.Context, yes: Yes = False, json: Json = False) -> None:
    """Erase all of your data: every memory's text and where it came from, every conversation
    with its messages and queued turns, every vector, every agent (its name and persona) and
    every API key. You and your audit log (its texts erased) remain; `mnemo keys create --user
    NAME` gives you a new key."""

    async def work(s: Session) -> Erased:
        if not yes:
            plan = await s.memory.everything_plan(s.user.id)
            raise CliFailure(
                f"Not erased. Erasing everything of {s.user.name!r} removes the text of "
                f"{plural(len(plan.facts), 'memory')}, {plural(len(plan.conversations), 'conversation')}"
                " with their messages "
                "and queued turns, every agent (its name and persona) and every API key, for good. "
                "It cannot be undone. "
                "Run again with --yes to erase."
            )
        return await erased(s, await s.memory.erase_everything(s.user.id))

    _say_receipt(run(ctx, work, resolve_agent=False), json)


@erase.command("about")
def erase_about(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="The subject, in its words (case and spacing aside).")],
    pick: Annotated[
        str | None, typer.Option("--pick", help="Erase these of the numbered matches, e.g. 1,3,4.")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Erase every match.")] = False,
    yes: Yes = False,
    json: Json = False,
) -> None:
    """Every memory and message that holds these words, numbered; with --pick (or --all) and
    --yes, erase those, with the messages the memories were learnt from."""

    async def work(s: Session) -> tuple[list[tuple[str, str, str]], Erased | None]:
        facts, messages = await s.memory.about(s.user.id, query)
        found = [("memory", f.id, f.text) for f in facts] + [("message", mid, t) for _, mid, t in messages]
        if pick is None and not every:
            return found, None
        chosen = found if every else [found[i - 1] for i in _numbers(pick or "", len(found))]
        if not yes:
            raise CliFailure(
                f"Not erased. {len(chosen)} of {len(found)} matches would go for good, with the "
                "messages the memories were learnt from. Run again with --yes to erase."
            )
        receipt = await s.memory.erase_selection(
            s.user.id,
            [i for kind, i, _ in chosen if kind == "memory"],
            [i for kind, i, _ in chosen if kind == "message"],
        )
        return found, await erased(s, receipt)

    found, receipt = run(ctx, work, resolve_agent=False)
    if receipt is not None:
        _say_receipt(receipt, json)
    elif json:
        output.emit_json(
            [{"number": n, "kind": k, "id": i, "text": t} for n, (k, i, t) in enumerate(found, 1)]
        )
    else:
        for n, (kind, _, text) in enumerate(found, 1):
            output.say(f"{n:>3}  {kind:<7}  {text}")
        output.say(
            "Nothing holds these words."
            if not found
            else "Erase some with --pick 1,3 --yes, or all with --all --yes."
        )


def _numbers(given: str, count: int) -> list[int]:
    try:
        numbers = sorted({int(part) for part in given.split(",") if part.strip()})
    except ValueError:
        raise CliFailure(f"--pick takes numbers separated by commas, not {given!r}", BAD_INPUT) from None
    if not numbers or numbers[0] < 1 or numbers[-1] > count:
        raise CliFailure(f"--pick takes numbers from 1 to {count}", BAD_INPUT)
    return numbers


@receipts.command("list")
def receipts_list(ctx: typer.Context, json: Json = False) -> None:
    """Your erasures' receipts, newest first."""

    async def work(s: Session) -> list[Receipt]:
        return await s.memory.receipts(s.user.id, limit=1000)

    found = run(ctx, work, resolve_agent=False)
    if json:
        output.emit_json([{"id": r.id, "kind": r.kind, "at": r.at.isoformat()} for r in found])
        return
    for r in found:
        output.say(f"{r.id}  {r.at:%Y-%m-%d %H:%M}  {r.kind}")
    if not found:
        output.say("No erasures yet.")


@receipts.command("show")
def receipts_show(
    ctx: typer.Context,
    receipt_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="The receipt's id, or a unique start of it (8 characters or more)."
        ),
    ],
    out: Annotated[Path | None, typer.Option("--out", help="Write it to this file (to check later).")] = None,
    json: Annotated[bool, typer.Option("--json", help="As JSON (what it always prints).")] = True,
) -> None:
    """One receipt as JSON: its body and signature (mnemo audit verify-receipt checks it)."""

    async def work(s: Session) -> Receipt:
        return await s.memory.receipt(s.user.id, await s.full_id(receipt_id, "receipt"))

    document = signing.document(run(ctx, work, resolve_agent=False))
    if out is None:
        output.emit_json(document)
        return
    out.write_text(jsonlib.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    output.say(f"Wrote {out}")


@audit.command("verify-receipt")
def audit_verify_receipt(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The receipt.")],
    json: Json = False,
) -> None:
    """Check a receipt: signed by this server's key, unchanged, and about an erasure its user's
    audit log holds."""
    try:
        document: Any = signing.parsed(file.read_text(encoding="utf-8"))
    except signing.DuplicateKey as exc:
        fail(f"Not a valid receipt: {exc}", BAD_INPUT, InvalidInput.code)
    except (ValueError, UnicodeDecodeError) as exc:
        fail(f"{file} is not JSON: {exc}", BAD_INPUT, InvalidInput.code)

    chosen = global_user(ctx)  # `mnemo --user NAME audit verify-receipt`: a receipt of NAME's

    async def work(s: Session) -> list[str]:
        return await s.memory.check_receipt(document, s.user.id if chosen is not None else None)

    problems = run(ctx, work, resolve_agent=False)
    if json:
        output.emit_json({"valid": not problems, "problems": problems})
    elif not problems:
        output.say("ok: signed by this server, unchanged, and in its user's audit log", "green")
    else:
        for problem in problems:
            output.error(f"Not a valid receipt: {problem}")
    if problems:
        raise typer.Exit(1)
