"""A database as the first schema version held it, written row by row the way mnemo wrote it
then, for the tests that upgrade it in place: its events have no salts (their digests cover
the content alone), one fact was purged, a valid time lies in the year 874 (which SQLite's
old writer stored as "874-…"), and a conversation id is alice's.

After an upgrade the tests check what each later migration promises of such data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from mnemo import audit
from mnemo.domain import Action, Category, Fact, Scope, Source, SourceKind, Status, Turn, new_id
from mnemo.store.fulltext import owner_token

ALICE, BOB = "0190c8e2-7b1d-7c3e-9a4f-000000000a11", "0190c8e2-7b1d-7c3e-9a4f-000000000b0b"
LISBON, PIN = "0190c8e2-7b1d-7c3e-9a4f-0000000f0001", "0190c8e2-7b1d-7c3e-9a4f-0000000f0002"
CONVERSATION = "chosen-by-alice"
PIN_TEXT = "My bank PIN is 4426"
AT = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
SINCE = datetime(874, 6, 1, tzinfo=UTC)


@dataclass
class Dialect:
    """How one backend's first schema is written to: placeholders, times, vectors."""

    sqlite: bool

    def sql(self, statement: str) -> str:
        return statement if self.sqlite else statement.replace("?", "%s")

    def time(self, value: datetime | None):
        if value is None or not self.sqlite:
            return value
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # the old writer: "874-06-01T…"


async def old_user(store, name: str) -> str:
    """A user written as an older version wrote one (today's store reads columns that came
    later: migration 15's record_recalls); its id."""
    from mnemo.store.sqlite import SQLiteStore

    user_id = new_id()
    if isinstance(store, SQLiteStore):
        store._conn.execute("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)", (user_id, name, AT))
        return user_id
    import psycopg

    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO users (id, name, created_at) VALUES (%s, %s, %s)", (user_id, name, AT)
        )
    return user_id


async def old_turn(store, user_id: str, conversation_id: str, said: str, at: datetime = AT) -> str:
    """A turn queued as an older version queued one: its conversation, message and job rows of
    the columns every version has had (today's store writes columns that came later: migration
    21's user_claimed_at, 22's words of a message); the job's id."""
    from mnemo.store.rows import ts
    from mnemo.store.sqlite import SQLiteStore
    from tests.helpers import raw_sql

    job_id, message_id = new_id(), new_id()
    when = ts(at) if isinstance(store, SQLiteStore) else at.isoformat()  # as each store writes times
    values = (
        job_id,
        user_id,
        conversation_id,
        json.dumps([message_id]),
        when,
        message_id,
        said.replace("'", "''"),
    )
    await raw_sql(
        store,
        "INSERT INTO conversations (id, user_id, created_at) VALUES ('{2}', '{1}', '{4}')"
        " ON CONFLICT (user_id, id) DO NOTHING".format(*values),
    )
    await raw_sql(
        store,
        "INSERT INTO messages (id, conversation_id, user_id, role, content, created_at)"
        " VALUES ('{5}', '{2}', '{1}', 'user', '{6}', '{4}')".format(*values),
    )
    await raw_sql(
        store,
        "INSERT INTO jobs (id, user_id, conversation_id, message_ids, turn_at, status, next_attempt_at,"
        " created_at) VALUES ('{0}', '{1}', '{2}', '{3}', '{4}', 'pending', '{4}', '{4}')".format(*values),
    )
    return job_id


def new_fact(fact_id: str, text: str, **changes) -> Fact:
    changes = {"embedding_model": "minilm", **changes}
    return Fact(
        id=fact_id,
        user_id=ALICE,
        agent_id=None,
        text=text,
        category=Category.OTHER,
        status=Status.ACTIVE,
        confidence=1.0,
        created_at=AT,
        recorded_at=AT,
        source=Source(SourceKind.API),
        last_seen_at=AT,
        **changes,
    )


def seed(conn, sqlite: bool, vector: np.ndarray, model: str) -> set[str]:
    """Write the first-version rows through a DB-API connection (committed by the caller);
    returns the digests of the purged PIN's events as the first version left them."""
    d = Dialect(sqlite)
    cur = conn.cursor()
    for user_id, name in ((ALICE, "alice"), (BOB, "bob")):
        cur.execute(
            d.sql("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)"), (user_id, name, d.time(AT))
        )
    cur.execute(
        d.sql("INSERT INTO conversations VALUES (?, ?, ?, ?)"), (CONVERSATION, ALICE, None, d.time(AT))
    )
    cur.execute(
        d.sql("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)"),
        ("alice-message", CONVERSATION, ALICE, "user", "I live in Lisbon", d.time(AT)),
    )
    lisbon = new_fact(LISBON, "I live in Lisbon", valid_from=SINCE, embedding_model=model)
    pin = new_fact(PIN, PIN_TEXT, embedding_model=model)
    purged = pin.evolve(
        text="", purged=True, status=Status.RETRACTED, retired_at=AT, version=2, embedding_model=None
    )
    for fact in (lisbon, purged):
        cur.execute(
            d.sql(
                "INSERT INTO facts (id, user_id, agent_id, text, text_hash, category, status, confidence,"
                " created_at, recorded_at, retired_at, valid_from, valid_to, supersedes, superseded_by,"
                " version, source, embedding_model, pinned, mentions, last_seen_at, purged)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            (
                fact.id, ALICE, None, fact.text, None if fact.purged else fact.text_hash, "other",
                str(fact.status), 1.0, d.time(fact.created_at), d.time(fact.recorded_at),
                d.time(fact.retired_at), d.time(fact.valid_from), None, None, None, fact.version,
                json.dumps(fact.source.to_json()), fact.embedding_model, False, 1, d.time(fact.last_seen_at),
                fact.purged,
            ),
        )  # fmt: skip
    rowid = cur.execute(d.sql("SELECT rowid FROM facts WHERE id = ?"), (LISBON,)).fetchone()[0]
    if sqlite:
        cur.execute("INSERT INTO fact_vectors VALUES (?, ?, ?, ?)", (rowid, ALICE, model, vector.tobytes()))
        cur.execute(
            "INSERT INTO facts_fts (rowid, owner, text) VALUES (?, ?, ?)",
            (rowid, owner_token(ALICE), lisbon.text),
        )
    else:
        cur.execute(
            "INSERT INTO fact_vectors VALUES (%s, %s, %s, %s, true, '', %s)",
            (rowid, ALICE, model, len(vector), "[" + ",".join(map(str, vector.tolist())) + "]"),
        )
        cur.execute("INSERT INTO vector_counts VALUES (%s, %s, 1)", (ALICE, model))
        cur.execute("INSERT INTO fact_counts VALUES (%s, 1)", (ALICE,))
    # the log as it was written then: digests over the content alone, the purge redacting after
    prev = audit.GENESIS
    guessable = set()
    for fact, action, before, redacted in (
        (lisbon, Action.CREATE, None, False),
        (pin, Action.CREATE, None, True),
        (purged, Action.PURGE, pin, True),
    ):
        after, earlier = fact.snapshot(), before.snapshot() if before else None
        digest = audit.content_digest(
            at=AT, user_id=ALICE, fact_id=fact.id, action=action, actor="user", reason=None,
            before=earlier, after=after, salt=None,
        )  # fmt: skip
        hashed = audit.chain_hash(prev, digest)
        if redacted:
            after, earlier = audit.redact(after), audit.redact(earlier)
            guessable.add(digest)
        cur.execute(
            d.sql(
                "INSERT INTO fact_events (at, user_id, fact_id, action, actor, reason, before, after,"
                " digest, prev_hash, hash, redacted) VALUES (?, ?, ?, ?, 'user', NULL, ?, ?, ?, ?, ?, ?)"
            ),
            (
                AT.isoformat(), ALICE, fact.id, str(action),
                None if earlier is None else json.dumps(earlier), json.dumps(after),
                digest, prev, hashed, redacted,
            ),
        )  # fmt: skip
        prev = hashed
    return guessable


def pin_guesses(model: str) -> set[str]:
    """Every digest an offline guesser would compute for the purged four-digit PIN's events,
    given the unsalted content the first schema's digests covered."""
    pin = new_fact(PIN, PIN_TEXT, embedding_model=model)
    purged = pin.evolve(
        text="", purged=True, status=Status.RETRACTED, retired_at=AT, version=2, embedding_model=None
    )
    found = set()
    for guess in range(10_000):
        said = pin.evolve(text=f"My bank PIN is {guess:04d}").snapshot()
        for action, before, after in ((Action.CREATE, None, said), (Action.PURGE, said, purged.snapshot())):
            found.add(
                audit.content_digest(
                    at=AT, user_id=ALICE, fact_id=PIN, action=action, actor="user", reason=None,
                    before=before, after=after, salt=None,
                )
            )  # fmt: skip
    return found


async def check_upgraded(memory, guessable: set[str]) -> None:
    """What the later migrations promise of the first version's data (`guessable`: what `seed`
    returned)."""
    assert (await memory.verify_audit(ALICE)).ok
    # the purged PIN can no longer be confirmed from the log: the first version's digests
    # fell to guessing, and now no digest, nor any hash chained over one, matches a guess
    guesses = pin_guesses(memory.embedder.model_name)
    assert guessable and guessable <= guesses
    for event in await memory.store.events(ALICE):
        assert event.digest not in guesses
        assert all(audit.chain_hash(event.prev_hash, g) != event.hash for g in guesses)
    # the year 874 reads back, and recall still finds the fact
    facts = {f.id: f for f in await memory.list(Scope(ALICE, all_agents=True), statuses=None)}
    assert facts[LISBON].valid_from == SINCE
    assert [h.fact.text for h in await memory.recall("where do I live", Scope(ALICE))] == ["I live in Lisbon"]
    # the words of the messages already there are indexed: an erasure finds the messages
    assert [t for _, _, t in await memory.store.messages_saying(ALICE, ["LISBON"])] == ["I live in Lisbon"]
    # the conversation id alice chose first is bob's to use as well
    job = await memory.submit(
        Turn.of(Scope(BOB), ("user", "I live in Oslo"), ("assistant", "Noted."), conversation_id=CONVERSATION)
    )
    assert job is not None
    assert [m.content for m in await memory.messages(BOB, CONVERSATION)] == ["I live in Oslo", "Noted."]
    assert [m.content for m in await memory.messages(ALICE, CONVERSATION)] == ["I live in Lisbon"]
