"""Rendering: Rich tables for people, one JSON document on stdout for machines.

Text that comes from memory is always wrapped in `Text`, never parsed as Rich markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..accounts import Member
from ..domain import FACT_KINDS, Agent, ApiKey, AuditReport, Event, Fact, StoredTurn, utcnow
from ..erasure import Plan, Said
from ..recall.fuse import Hit

ERASED = "(erased)"
# Below this width the id goes under the text instead of into its own column.
WIDE = 110


def stdout(soft_wrap: bool = False) -> Console:
    """The standard output's console, built per call: the stream is looked up when printing
    (CliRunner swaps it). `soft_wrap`: lines are printed whole (a terminal folds them itself,
    a pipe or a file gets them as they are), never folded at the width."""
    return Console(highlight=False, soft_wrap=soft_wrap)


def show(renderable: Any) -> None:
    """Print a table as it is where it fits; on a terminal too narrow for it (its columns kept
    whole need more than the width), each row as a block of labelled lines instead, so that
    no id or time is cut short or split across lines."""
    console = stdout()
    if isinstance(renderable, Table):
        unbounded = console.options.update(max_width=100_000)  # measured, a table is cut to fit
        needed = Measurement.get(console, unbounded, renderable).minimum
        if needed > console.width:
            renderable = records(renderable)
    console.print(renderable)


def records(table: Table) -> Table:
    """Each row of `table` as labelled lines (its column headers), a blank line between rows."""
    grid = Table.grid(padding=(0, 2))
    grid.title = table.title
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    columns = [(str(c.header), list(c.cells)) for c in table.columns]
    for row in range(table.row_count):
        if row:
            grid.add_row("", "")
        for header, cells in columns:
            value = cells[row] if row < len(cells) else ""
            if header and str(value).strip():
                grid.add_row(header, value)
    return grid


def error(message: str) -> None:
    """A failure or a warning on standard error, never folded (its code first, when it has one)."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text(printable(message), style="red"))


def said_lines(messages: Sequence[Said]) -> list[str]:
    """Each message of an erasure's plan: where it is, and what it says."""
    return [
        f"  {m.message_id}  conversation {m.conversation_id!r}, {m.at:%Y-%m-%d %H:%M}, {m.role},"
        f" {m.characters:,} characters ({m.why}):\n      {json.dumps(m.excerpt, ensure_ascii=False)}"
        for m in messages
    ]


def plan_lines(plan: Plan, agent_names: Mapping[str | None, str]) -> list[str]:
    """What an erasure of memories takes and leaves, message by message (mnemo purge)."""
    lines = []
    if plan.said:
        lines.append(
            f"It erases the text of {len(plan.said)} message(s) (each keeps its place and time;"
            " --keep-message ID leaves one out):"
        )
        lines += said_lines(plan.said)
    if plan.offered:
        lines.append(
            f"{len(plan.offered)} message(s) say it but stay (much longer than it, or left out;"
            " --message ID erases one too):"
        )
        lines += said_lines(plan.offered)
    if plan.elsewhere:
        lines.append(
            f"The same text stays in {len(plan.elsewhere)} memory(ies) of your other agents, where it is"
            " still recalled (--other-agents erases it there too):"
        )
        lines += [f"  {f.id}  {agent_names.get(f.agent_id, 'default')}: {f.text}" for f in plan.elsewhere]
    if plan.cited_by:
        lines.append(f"{len(plan.cited_by)} other memory(ies) learnt from those messages stay:")
        lines += [f"  {f.id}  {f.text}" for f in plan.cited_by]
    return lines


def lingering(note: str | None) -> None:
    """Why an erased text stays in the database's files a while (Memory.lingering), if it does."""
    if note:
        say(f"Note: {note}.", "yellow")


# control characters (but newline and tab) a stored text may hold: a message through the chat
# proxy, a name set before names refused them; printed as they are, they would drive the terminal
_CONTROLS = {c: "\ufffd" for c in [*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


def printable(text: str) -> str:
    """`text` with every control character but newline and tab shown as U+FFFD."""
    return text.translate(_CONTROLS)


def say(message: str | Text, style: str | None = None) -> None:
    """A line (or lines) of text, never folded: read by people and by scripts (`mnemo doctor | grep`)."""
    text = message if isinstance(message, Text) else Text(printable(message), style=style or "")
    stdout(soft_wrap=True).print(text)


def emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def emit_line(data: Any) -> None:
    """One JSON object on one line: what a long-running command says as it goes (JSON Lines)."""
    typer.echo(json.dumps(data, ensure_ascii=False, default=str))


# -- JSON shapes ---------------------------------------------------------------------


def fact_json(fact: Fact) -> dict[str, Any]:
    """The fact as the API shows it: its snapshot, and whether its end has passed."""
    return {**fact.snapshot(), "ended": fact.ended(utcnow())}


def hit_json(rank: int, hit: Hit) -> dict[str, Any]:
    return {
        "rank": rank,
        "score": hit.score,
        "why": {arm: {"rank": r.rank, "score": r.score} for arm, r in hit.reasons.items()},
        "fact": fact_json(hit.fact),
    }


def agent_json(agent: Agent) -> dict[str, Any]:
    return {
        "id": agent.id,
        "name": agent.name,
        "private": agent.private,
        "reads_default": agent.reads_default,
    }


def audit_json(report: AuditReport) -> dict[str, Any]:
    return {"ok": report.ok, "events": report.events, "problems": list(report.problems)}


# -- tables ---------------------------------------------------------------------------


def _day(value: datetime | None) -> str:
    return value.date().isoformat() if value else ""  # not %Y: it writes the year 874 as "874"


def _minute(value: datetime | None) -> str:
    return value.isoformat(sep=" ", timespec="minutes")[:16] if value else ""


def _fact_text(fact: Fact) -> Text:
    if fact.purged:
        return Text(ERASED, style="dim")
    return Text(fact.text)


def _status(fact: Fact) -> str:
    """The status, with "ended <day>" for an active fact past its end, and "pinned"."""
    ended = f", ended {_day(fact.valid_to)}" if fact.ended(utcnow()) else ""
    return f"{fact.status}{ended}, pinned" if fact.pinned else f"{fact.status}{ended}"


def _table(**kwargs: Any) -> Table:
    return Table(box=box.SIMPLE_HEAD, **kwargs)


def _wide() -> bool:
    return stdout().width >= WIDE


def _text_and_id(fact: Fact, wide: bool, note: str = "") -> list[Any]:
    """The text cell, then the id cell; a narrow terminal gets the note and id under the text."""
    if wide:
        return [_fact_text(fact), Text(fact.id, style="cyan")]
    cell = _fact_text(fact)
    if note:
        cell.append(f"\n{note}", style="dim")
    cell.append(f"\n{fact.id}", style="cyan")
    return [cell]


def _text_column(table: Table, wide: bool, narrow_name: str = "text / id") -> None:
    table.add_column("text" if wide else narrow_name, ratio=1, overflow="fold")


def _id_column(table: Table, wide: bool) -> None:
    if wide:
        table.add_column("id", no_wrap=True, min_width=36)


def facts_table(
    facts: Sequence[Fact], agent_names: Mapping[str, str] | None = None, title: str | None = None
) -> Table:
    wide = _wide()
    show_agents = bool(agent_names)
    table = _table(title=title)
    table.add_column("date", no_wrap=True)
    table.add_column("status", no_wrap=True)
    if show_agents:
        table.add_column("agent", no_wrap=True)
    _text_column(table, wide)
    _id_column(table, wide)
    for fact in facts:
        row: list[Any] = [_day(fact.valid_from or fact.created_at), _status(fact)]
        if show_agents:
            row.append(Text((agent_names or {}).get(fact.agent_id or "", "default")))
        table.add_row(*row, *_text_and_id(fact, wide))
    return table


def why(hit: Hit) -> str:
    parts = []
    for arm, found in sorted(hit.reasons.items(), key=lambda item: item[1].rank):
        parts.append(arm if arm == "pinned" else f"{arm} #{found.rank}")
    return ", ".join(parts)


def hits_table(hits: Sequence[Hit]) -> Table:
    wide = _wide()
    table = _table()
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("date", no_wrap=True)
    _text_column(table, wide, "text / why / id")
    if wide:
        table.add_column("why", overflow="fold")
    _id_column(table, wide)
    for rank, hit in enumerate(hits, start=1):
        seen = hit.fact.last_seen_at or hit.fact.created_at
        if wide:
            text, id_cell = _text_and_id(hit.fact, wide)
            table.add_row(str(rank), _day(seen), text, why(hit), id_cell)
        else:
            table.add_row(str(rank), _day(seen), *_text_and_id(hit.fact, wide, why(hit)))
    return table


def fact_detail(fact: Fact, agent_names: Mapping[str, str] | None = None) -> Table:
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    agent = (agent_names or {}).get(fact.agent_id or "", fact.agent_id or "default")
    rows: list[tuple[str, Any]] = [
        ("id", fact.id),
        ("text", _fact_text(fact)),
        ("status", str(fact.status)),
        ("category", str(fact.category)),
        ("agent", agent),
        ("pinned", "yes" if fact.pinned else "no"),
        ("version", str(fact.version)),
        ("confidence", f"{fact.confidence:.2f}"),
        ("mentions", str(fact.mentions)),
        ("created", _minute(fact.created_at)),
        ("recorded", _minute(fact.recorded_at)),
        ("last seen", _minute(fact.last_seen_at)),
        ("valid from", _minute(fact.valid_from)),
        ("valid to", _minute(fact.valid_to)),
        ("retired", _minute(fact.retired_at)),
        ("supersedes", fact.supersedes or ""),
        ("superseded by", fact.superseded_by or ""),
        ("source", str(fact.source.kind)),
        ("conversation", fact.source.conversation_id or ""),
    ]
    for name, value in rows:
        if value in ("", None):
            continue
        table.add_row(name, value if isinstance(value, Text) else Text(str(value)))
    return table


def _snapshot_text(snapshot: Mapping[str, Any] | None) -> str | None:
    if snapshot is None:
        return None
    return snapshot.get("text") or ERASED


def change_text(event: Event) -> Text:
    """The text an event recorded: new, old → new, or unchanged."""
    before, after = _snapshot_text(event.before), _snapshot_text(event.after)
    if before is None:
        return Text(after or ERASED)
    if after is None or before == after:
        return Text(before)
    return Text.assemble((before, "dim"), " → ", after)


def change_status(event: Event) -> str:
    before = (event.before or {}).get("status")
    after = (event.after or {}).get("status")
    if before and after and before != after:
        return f"{before} → {after}"
    return after or before or ""


def history_table(events: Sequence[Event], ended_at: datetime | None = None) -> Table:
    """The events, oldest first, and the passed end of a fact still active (`ended_at`), read as
    the event it is: from then on it is not recalled as true now."""
    table = _table()
    table.add_column("when", no_wrap=True)
    table.add_column("action", no_wrap=True)
    table.add_column("actor", no_wrap=True)
    table.add_column("text", ratio=1, overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for e in events:
        table.add_row(
            _minute(e.at),
            str(e.action),
            Text(e.actor),
            change_text(e),
            change_status(e),
            Text(e.reason or ""),
        )
    if ended_at is not None:
        passed = Text("its end passed: not recalled as true now")
        table.add_row(_minute(ended_at), "ended", "", "", "", passed)
    return table


def agents_table(agents: Sequence[Agent]) -> Table:
    table = _table()
    table.add_column("name")
    table.add_column("private", no_wrap=True)
    table.add_column("reads default", no_wrap=True)
    table.add_column("id", style="cyan", no_wrap=True)
    for a in agents:
        table.add_row(
            Text(printable(a.name)), "yes" if a.private else "no", "yes" if a.reads_default else "no", a.id
        )
    return table


def members_table(members: Sequence[Member]) -> Table:
    """Everyone: the keys counted are the live (unrevoked) ones."""
    table = _table()
    table.add_column("name", min_width=8)
    for column in ("id", "created", "keys", "memory", "queued", "failed", "account"):
        table.add_column(column, no_wrap=True)
    for m in members:
        on = "on" if m.memory_on else "off"
        account = "disabled" if m.user.disabled_at else "enabled"
        row = (
            m.user.id,
            _day(m.user.created_at),
            str(m.live_keys),
            on,
            str(m.queued),
            str(m.failed),
            account,
        )
        table.add_row(Text(m.user.name), *row)
    return table


def keys_table(keys: Sequence[ApiKey]) -> Table:
    """A user's keys: ids, labels and dates, never a secret."""
    table = _table()
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("name")
    table.add_column("created", no_wrap=True)
    table.add_column("last used", no_wrap=True)
    table.add_column("revoked", no_wrap=True)
    for k in keys:
        used = _minute(k.last_used_at) or "never"
        table.add_row(
            k.id, Text(printable(k.name)), _minute(k.created_at), used, _minute(k.revoked_at) or "no"
        )
    return table


def event_line(event: Event) -> Text:
    """One line per event of a turn, for `mnemo remember`."""
    line = Text.assemble((f"{event.action}", "bold"), " ", (event.fact_id, "cyan"), " ", change_text(event))
    if event.reason:
        line.append(f"  ({event.reason})", style="dim")
    return line


def minute(value: datetime | None) -> str:
    return _minute(value)


def turns_table(turns: Sequence[StoredTurn]) -> Table:
    """Stored turns: state, reason, and how many facts of each kind each one touched (and how
    many items of the model's reply it dropped)."""
    table = _table()
    for column in ("id", "stored", "state", "reason", "learnt"):
        table.add_column(column, overflow="fold")
    for t in turns:
        learnt = ", ".join(
            [f"{kind} {len(t.facts[kind])}" for kind in FACT_KINDS if t.facts[kind]]
            + ([f"dropped {sum(t.dropped.values())}"] if t.dropped else [])
        )
        table.add_row(t.id, _minute(t.created_at), turn_state(t), t.reason or "", learnt or "—")
    return table


def turn_state(turn: StoredTurn) -> str:
    """A turn's state, with when it will be learnt if it waits over budget."""
    return str(turn.state) + (f" until {_minute(turn.learn_at)}" if turn.learn_at else "")
