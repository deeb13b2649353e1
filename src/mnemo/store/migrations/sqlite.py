"""Schema history of the SQLite store. Append new migrations; never edit applied ones."""

from __future__ import annotations

import sqlean

from ..fulltext import message_words
from ..migrate import Cursor, Migration
from ..sql.events import reseal
from ..sql.tx import SyncTx, run_sync


def _script(cur: Cursor, sql: str) -> None:
    """Run statements one by one: executescript would commit the open transaction."""
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlean.complete_statement(pending):
            cur.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending!r}")


def _initial(cur: Cursor) -> None:
    _script(
        cur,
        """
        CREATE TABLE users (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            memory_enabled INTEGER,
            review_policy TEXT NOT NULL DEFAULT 'auto'
        );
        CREATE TABLE agents (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(id),
            name TEXT NOT NULL,
            private INTEGER NOT NULL DEFAULT 0,
            reads_default INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            UNIQUE (user_id, name)
        );
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE messages (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            user_id TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX messages_conversation ON messages (conversation_id, created_at);
        CREATE TABLE facts (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            agent_id TEXT,
            text TEXT NOT NULL,
            text_hash TEXT,
            category TEXT NOT NULL,
            status TEXT NOT NULL,
            confidence REAL NOT NULL,
            created_at TEXT NOT NULL,
            recorded_at TEXT,
            retired_at TEXT,
            valid_from TEXT,
            valid_to TEXT,
            supersedes TEXT,
            superseded_by TEXT,
            version INTEGER NOT NULL,
            source TEXT NOT NULL,
            embedding_model TEXT,
            pinned INTEGER NOT NULL DEFAULT 0,
            mentions INTEGER NOT NULL DEFAULT 1,
            last_seen_at TEXT,
            purged INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX facts_recent ON facts (user_id, status, last_seen_at);
        CREATE INDEX facts_hash ON facts (user_id, text_hash);
        CREATE INDEX facts_pinned ON facts (user_id, pinned) WHERE pinned = 1;
        -- active facts only; owner is a token derived from the user id, so that
        -- MATCH intersects one user's postings instead of filtering everyone's
        CREATE VIRTUAL TABLE facts_fts USING fts5 (owner, text, tokenize = 'porter unicode61');
        CREATE VIRTUAL TABLE facts_fts_vocab USING fts5vocab (facts_fts, row);
        -- float32 blobs: the durable copy of each fact's vector (see store/vectors.py)
        CREATE TABLE fact_vectors (
            rowid INTEGER PRIMARY KEY REFERENCES facts(rowid),
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            embedding BLOB NOT NULL
        );
        CREATE INDEX fact_vectors_owner ON fact_vectors (user_id, model);
        -- bumped with every change to a user's vectors, so that other processes'
        -- in-memory vector caches know to reload
        CREATE TABLE vector_generations (
            user_id TEXT PRIMARY KEY,
            generation INTEGER NOT NULL
        );
        CREATE TABLE fact_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at TEXT NOT NULL,
            user_id TEXT NOT NULL,
            fact_id TEXT NOT NULL,
            action TEXT NOT NULL,
            actor TEXT NOT NULL,
            reason TEXT,
            before TEXT,
            after TEXT,
            digest TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL,
            redacted INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX fact_events_user ON fact_events (user_id, seq);
        CREATE INDEX fact_events_fact ON fact_events (fact_id, seq);
        CREATE TRIGGER fact_events_no_delete BEFORE DELETE ON fact_events
        BEGIN SELECT RAISE(ABORT, 'fact_events is append-only'); END;
        """,
    )


def _server(cur: Cursor) -> None:
    """API keys, agents' settings, and the durable queue of turns to learn from."""
    _script(
        cur,
        """
        CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(id),
            name TEXT NOT NULL,
            secret_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            revoked_at TEXT
        );
        CREATE INDEX api_keys_user ON api_keys (user_id);
        ALTER TABLE agents ADD COLUMN persona TEXT;
        ALTER TABLE agents ADD COLUMN upstream_model TEXT;
        ALTER TABLE agents ADD COLUMN deleted_at TEXT;
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(id),
            agent_id TEXT,
            conversation_id TEXT NOT NULL,
            message_ids TEXT NOT NULL,
            automation INTEGER NOT NULL DEFAULT 0,
            turn_at TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TEXT NOT NULL,
            lease_until TEXT,
            claimed_by TEXT,
            last_error TEXT,
            result TEXT,
            created_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX jobs_due ON jobs (status, next_attempt_at);
        CREATE INDEX jobs_user ON jobs (user_id, created_at);
        """,
    )


def _turn_order(cur: Cursor) -> None:
    """Each person's turns are learnt from one at a time, in the order they came: the claim
    looks for an earlier open job of the same user (jobs.id is a UUIDv7, so time-ordered)."""
    _script(cur, "CREATE INDEX jobs_open ON jobs (user_id, id) WHERE status IN ('pending', 'claimed');\n")


def _backfill(cur: Cursor) -> None:
    """Which turns `mnemo backfill` has learnt from, each marked in the same transaction as its
    facts (see BackfillMark); and messages found by when they were said."""
    _script(
        cur,
        """
        -- one row per turn learnt from, named by the user message that opens it
        CREATE TABLE backfill_progress (
            user_id TEXT NOT NULL REFERENCES users(id),
            conversation_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            said_at TEXT NOT NULL,
            processed_at TEXT NOT NULL,
            PRIMARY KEY (user_id, conversation_id, turn_id)
        );
        CREATE INDEX messages_said ON messages (user_id, created_at);
        -- the turns never learnt from, which backfill leaves out
        CREATE INDEX jobs_automation ON jobs (user_id, conversation_id) WHERE automation = 1;
        """,
    )


def _vector_per_model(cur: Cursor) -> None:
    """A fact may hold a vector per embedding model, so that `mnemo reindex` can write the new
    model's vectors beside the old ones while recall keeps reading the old."""
    _script(
        cur,
        """
        CREATE TABLE fact_vectors_by_model (
            fact_rowid INTEGER NOT NULL REFERENCES facts(rowid),
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            embedding BLOB NOT NULL,
            PRIMARY KEY (fact_rowid, model)
        );
        INSERT INTO fact_vectors_by_model (fact_rowid, user_id, model, embedding)
            SELECT rowid, user_id, model, embedding FROM fact_vectors;
        DROP TABLE fact_vectors;
        ALTER TABLE fact_vectors_by_model RENAME TO fact_vectors;
        CREATE INDEX fact_vectors_owner ON fact_vectors (user_id, model);
        """,
    )


def _common_words(cur: Cursor) -> None:
    """PostgreSQL's lexical search began reading its common words once a while; SQLite reads
    them from the index's own vocabulary, so nothing changes here. Kept, so that a version
    names the same change on both stores."""


def _user_conversations(cur: Cursor) -> None:
    """Conversation and message ids are each user's own: keyed by (user_id, id), so that an id
    one person chose first can neither block another person's turns nor tell them it exists."""
    _script(
        cur,
        """
        CREATE TABLE conversations_new (
            id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            agent_id TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (user_id, id)
        );
        INSERT INTO conversations_new SELECT id, user_id, agent_id, created_at FROM conversations;
        CREATE TABLE messages_new (
            id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (user_id, id),
            FOREIGN KEY (user_id, conversation_id) REFERENCES conversations_new (user_id, id)
        );
        INSERT INTO messages_new SELECT id, conversation_id, user_id, role, content, created_at FROM messages;
        DROP TABLE messages;
        DROP TABLE conversations;
        ALTER TABLE conversations_new RENAME TO conversations;
        ALTER TABLE messages_new RENAME TO messages;
        CREATE INDEX messages_conversation ON messages (user_id, conversation_id, created_at);
        CREATE INDEX messages_said ON messages (user_id, created_at);
        """,
    )


def _erasure(cur: Cursor) -> None:
    """Each event's digest covers a random salt of its own, which a purge erases with the text
    (see mnemo.audit). The events already redacted have digests of their erased text: they get
    random ones, and their users' logs are chained again from the first of them. And the
    full-text index overwrites what it deletes (FTS5's secure-delete), as the database does
    with `PRAGMA secure_delete`, so that an erased text leaves no copy in free space."""
    cur.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1)")
    cur.execute("ALTER TABLE fact_events ADD COLUMN salt TEXT")
    # the purged fact whose erasure took this event's reason (it told of that fact)
    cur.execute("ALTER TABLE fact_events ADD COLUMN redacted_for TEXT")
    redacted: dict[str, set[int]] = {}
    for user_id, seq in cur.execute("SELECT user_id, seq FROM fact_events WHERE redacted = 1").fetchall():
        redacted.setdefault(user_id, set()).add(seq)
    for user_id, seqs in redacted.items():
        run_sync(reseal(SyncTx(cur), user_id, seqs))


# every column written by rows.ts (event times are ISO text, four-digit already)
_TIMES = {
    "users": ("created_at",),
    "agents": ("created_at", "deleted_at"),
    "conversations": ("created_at",),
    "messages": ("created_at",),
    "facts": ("created_at", "recorded_at", "retired_at", "valid_from", "valid_to", "last_seen_at"),
    "api_keys": ("created_at", "revoked_at"),
    "jobs": ("turn_at", "next_attempt_at", "lease_until", "created_at", "finished_at"),
    "backfill_progress": ("said_at", "processed_at"),
}


def _four_digit_years(cur: Cursor) -> None:
    """Times before the year 1000 were written with fewer than four digits ("874-06-01T…"),
    which reads back as no time at all and sorts out of order: pad them to the width of the
    rest ("0874-06-01T00:00:00.000000Z", 27 characters)."""
    for table, columns in _TIMES.items():
        for column in columns:
            cur.execute(
                f"UPDATE {table} SET {column} = substr('0000' || {column}, length({column}) - 22)"
                f" WHERE {column} LIKE '%Z' AND length({column}) BETWEEN 24 AND 26"
            )


def _copy_table(cur: Cursor, table: str, replace: dict[str, str], keys: str) -> None:
    """Create `{table}_new` (SQLite cannot change a table's key or drop a constraint): `table`
    as its stored definition makes it, with each text of `replace` (found there once) replaced
    and the constraints `keys` added; and fill it with `table`'s rows, every column as it is (a
    rowid alias too, so that every row keeps its rowid)."""
    (sql,) = cur.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    for old, new in {f"CREATE TABLE {table} (": f"CREATE TABLE {table}_new (", **replace}.items():
        if sql.count(old) != 1:
            raise RuntimeError(f"the definition of {table} does not hold {old!r} once: {sql}")
        sql = sql.replace(old, new)
    cur.execute(sql.rstrip().removesuffix(")").rstrip() + f",\n            {keys}\n        )")
    columns = ", ".join(row[1] for row in cur.execute(f"PRAGMA table_info({table})").fetchall())
    cur.execute(f"INSERT INTO {table}_new ({columns}) SELECT {columns} FROM {table}")


def _user_keys(cur: Cursor) -> None:
    """Every per-user table's key includes user_id, as PostgreSQL's do from this version on (a
    distributed PostgreSQL needs it: see migrations/postgres.py): facts by (user_id, id), their
    vectors by (user_id, fact_rowid, model) with a foreign key (user_id, fact_rowid) that keeps
    each vector its fact's user's, events by (user_id, seq), jobs and API keys by (user_id, id).
    Fact, job and key ids are each user's own now, as conversation ids are since version 7; the
    lookups by id alone that remain (a key's owner, a claimed job's owner) have an index.

    facts.rowid and fact_events.seq stay their tables' INTEGER PRIMARY KEY, an alias of SQLite's
    rowid: the full-text index (facts_fts, whose rowids are the facts') and the vectors
    (fact_rowid) name facts by it, and only an alias is sure to keep its values (VACUUM may
    renumber a rowid that is not one). A WITHOUT ROWID table keyed (user_id, rowid) would keep
    them too, but would have to number its rows itself and would move every lookup by rowid
    (the full-text join, the vector cache's) onto a second index. So the rowid stays the key of
    the file, and the keys with user_id are unique beside it: facts (user_id, id), in place of
    the unique id, and (user_id, rowid), the parent of the vectors' foreign key; fact_events
    (user_id, seq), a unique index in place of the plain one on those columns (the log, the
    largest table, is not rebuilt). Its index by fact becomes (user_id, fact_id, seq), as on
    PostgreSQL: SQLite's planner would otherwise prefer the user's unique key to (fact_id, seq)
    and read all of the user's events to find one fact's.

    facts is rebuilt with its rowids as they are, so that the full-text index and the vectors
    still find their facts; fact_vectors, jobs and api_keys are rebuilt for their new keys."""
    _copy_table(
        cur,
        "facts",
        {"id TEXT NOT NULL UNIQUE,": "id TEXT NOT NULL,"},
        "UNIQUE (user_id, id), UNIQUE (user_id, rowid)",
    )
    _copy_table(cur, "jobs", {"id TEXT PRIMARY KEY,": "id TEXT NOT NULL,"}, "PRIMARY KEY (user_id, id)")
    _copy_table(cur, "api_keys", {"id TEXT PRIMARY KEY,": "id TEXT NOT NULL,"}, "PRIMARY KEY (user_id, id)")
    _script(
        cur,
        """
        CREATE TABLE fact_vectors_new (
            fact_rowid INTEGER NOT NULL,
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            embedding BLOB NOT NULL,
            PRIMARY KEY (user_id, fact_rowid, model),
            FOREIGN KEY (user_id, fact_rowid) REFERENCES facts_new (user_id, rowid)
        );
        -- each vector takes its fact's user (every writer copied it from the fact)
        INSERT INTO fact_vectors_new (fact_rowid, user_id, model, embedding)
            SELECT v.fact_rowid, f.user_id, v.model, v.embedding
            FROM fact_vectors v JOIN facts f ON f.rowid = v.fact_rowid;
        DROP TABLE fact_vectors;
        DROP TABLE facts;
        ALTER TABLE facts_new RENAME TO facts;
        ALTER TABLE fact_vectors_new RENAME TO fact_vectors;
        CREATE INDEX facts_recent ON facts (user_id, status, last_seen_at);
        CREATE INDEX facts_hash ON facts (user_id, text_hash);
        CREATE INDEX facts_pinned ON facts (user_id, pinned) WHERE pinned = 1;
        CREATE INDEX fact_vectors_owner ON fact_vectors (user_id, model);

        CREATE UNIQUE INDEX fact_events_key ON fact_events (user_id, seq);
        DROP INDEX fact_events_user;
        DROP INDEX fact_events_fact;
        CREATE INDEX fact_events_fact ON fact_events (user_id, fact_id, seq);

        DROP TABLE jobs;
        ALTER TABLE jobs_new RENAME TO jobs;
        CREATE INDEX jobs_due ON jobs (status, next_attempt_at);
        CREATE INDEX jobs_user ON jobs (user_id, created_at);
        CREATE INDEX jobs_open ON jobs (user_id, id) WHERE status IN ('pending', 'claimed');
        CREATE INDEX jobs_automation ON jobs (user_id, conversation_id) WHERE automation = 1;
        -- a claimed job's owner, found by its id before the user is known
        CREATE INDEX jobs_claimed ON jobs (id) WHERE status = 'claimed';

        DROP TABLE api_keys;
        ALTER TABLE api_keys_new RENAME TO api_keys;
        -- a key's owner, found by its id before the user is known
        CREATE INDEX api_keys_id ON api_keys (id);
        """,
    )


def _forgetting(cur: Cursor) -> None:
    """Erasure reaches the messages a fact was learnt from (their text is erased, the time it
    was erased stays), keeps a keyed hash of every erased text so that nothing erased is
    learnt again, and keeps the signed receipt of each erasure."""
    _script(
        cur,
        """
        ALTER TABLE messages ADD COLUMN erased_at TEXT;
        CREATE TABLE erased_texts (
            user_id TEXT NOT NULL REFERENCES users(id),
            hash TEXT NOT NULL,
            erased_at TEXT NOT NULL,
            PRIMARY KEY (user_id, hash)
        );
        CREATE TABLE receipts (
            user_id TEXT NOT NULL REFERENCES users(id),
            id TEXT NOT NULL,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            signature TEXT NOT NULL,
            PRIMARY KEY (user_id, id)
        );
        CREATE INDEX receipts_at ON receipts (user_id, at);
        """,
    )


def _operations(cur: Cursor) -> None:
    """The heartbeats of the job workers (`mnemo serve`'s own, `mnemo worker` processes), which
    /readyz reads: one row per worker, written every few seconds at most, not on every poll.
    Server-wide, like settings: a worker's name (host:pid:…) is no one's data."""
    _script(
        cur,
        """
        CREATE TABLE worker_heartbeats (worker TEXT PRIMARY KEY, beat_at TEXT NOT NULL);
        """,
    )


def _turn_states(cur: Cursor) -> None:
    """A turn a person can follow: learnt without a chat model (waiting, queued again by a
    worker that has one), or skipped, each a status of its own. Jobs skipped before were done
    with the reason in their result: they are skipped now."""
    _script(
        cur,
        """
        CREATE INDEX jobs_waiting ON jobs (id) WHERE status = 'waiting';
        UPDATE jobs SET status = 'skipped', result = json_set(result, '$.skip_reason',
            CASE json_extract(result, '$.skipped')
                WHEN 'automation turns never write memory' THEN 'automation'
                WHEN 'its agent was deleted' THEN 'agent_deleted' ELSE 'memory_off' END)
        WHERE status = 'done' AND json_extract(result, '$.skipped') IS NOT NULL;
        """,
    )


def _erase_everything(cur: Cursor) -> None:
    """Erasing all of a person's data deletes their API keys (but the one in use); SQLite has
    no grants, so nothing changes here. Kept, so that a version names the same change on both
    stores."""


def _recalls(cur: Cursor) -> None:
    """Which assistant recalled which fact, when, and through which face: a row per fact per
    recall (a recall's rows share its id), kept MNEMO_RECALL_LOG_DAYS; the person's switch
    (record_recalls, on by default) stops it. Keyed by the fact first, so that a fact's page
    reads its own rows; by time for the rows past keeping."""
    _script(
        cur,
        """
        ALTER TABLE users ADD COLUMN record_recalls INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE recalls (
            user_id TEXT NOT NULL REFERENCES users(id),
            fact_id TEXT NOT NULL,
            at TEXT NOT NULL,
            recall_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            via TEXT NOT NULL,
            PRIMARY KEY (user_id, fact_id, at, recall_id)
        ) WITHOUT ROWID;
        CREATE INDEX recalls_at ON recalls (user_id, at);
        """,
    )


def _token_budgets(cur: Cursor) -> None:
    """The chat model's tokens spent on learning, per user per UTC day (a day is its ISO date),
    and a user's own daily budget set by the administrator (none: the server's). A turn whose
    person spent the day's budget waits over_budget until the next UTC midnight: one still open,
    in the order of a person's turns."""
    _script(
        cur,
        """
        CREATE TABLE token_usage (
            user_id TEXT NOT NULL REFERENCES users(id),
            day TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            calls INTEGER NOT NULL,
            unreported_calls INTEGER NOT NULL,
            PRIMARY KEY (user_id, day)
        ) WITHOUT ROWID;
        CREATE TABLE token_budgets (
            user_id TEXT PRIMARY KEY REFERENCES users(id),
            daily_tokens INTEGER NOT NULL
        );
        DROP INDEX jobs_open;
        CREATE INDEX jobs_open ON jobs (user_id, id) WHERE status IN ('pending', 'claimed', 'over_budget');
        """,
    )


def _sensitive_gate(cur: Cursor) -> None:
    """The person's choices for the sensitive-data gate (mnemo.sensitive): a JSON object of
    category → action holding only what differs from the defaults ({}: the defaults)."""
    _script(cur, "ALTER TABLE users ADD COLUMN sensitive_gate TEXT NOT NULL DEFAULT '{}';")


def _citus(cur: Cursor) -> None:
    """PostgreSQL's tables are distributed on a Citus cluster; SQLite has nothing to do. Kept,
    so that a version names the same change on both stores."""


def _routed_lexical(cur: Cursor) -> None:
    """PostgreSQL's lexical search names its user as an argument (one shard on Citus); SQLite
    has nothing to do. Kept, so that a version names the same change on both stores."""


def _time_indexes(cur: Cursor) -> None:
    """The time arm's two searches each walk an index of their own: facts said in a window
    (created_at) and facts that became true in it (valid_from). Without them, one search of
    a window read every active fact of the person (250 ms at 100k facts)."""
    _script(
        cur,
        """
        CREATE INDEX facts_said ON facts (user_id, status, created_at);
        CREATE INDEX facts_valid ON facts (user_id, status, valid_from);
        """,
    )


def _fair_claims(cur: Cursor) -> None:
    """Workers take people in turn (the one served longest ago first): each job carries when
    its person last had a turn claimed (see jobs.stamp_claim), and that latest stamp of a
    person is one index step away."""
    _script(
        cur,
        """
        ALTER TABLE jobs ADD COLUMN user_claimed_at TEXT;
        CREATE INDEX jobs_user_claimed ON jobs (user_id, user_claimed_at);
        """,
    )


MESSAGES_A_READ = 1000  # how many messages a migration reads at once


def _message_words(cur: Cursor) -> None:
    """The words of each message (fulltext.message_words), so that an erasure's plan and
    "erase about" read only the messages that hold a text's words, not all of a person's on
    the store's one thread. A contentless full-text table (no copy of the text, only its
    terms, each a hash keyed by the person) whose rows an erasure overwrites (secure-delete);
    a message names its row (its own rowid may change in a VACUUM), and triggers delete that
    row when the message is deleted or names another (none: erased)."""
    _script(
        cur,
        """
        ALTER TABLE messages ADD COLUMN words INTEGER;
        CREATE VIRTUAL TABLE messages_fts USING fts5 (
            words, content = '', contentless_delete = 1, tokenize = 'ascii'
        );
        INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
        CREATE INDEX messages_words ON messages (user_id, words);
        CREATE TRIGGER messages_words_deleted AFTER DELETE ON messages WHEN old.words IS NOT NULL
        BEGIN
            DELETE FROM messages_fts WHERE rowid = old.words;
        END;
        CREATE TRIGGER messages_words_replaced AFTER UPDATE OF words ON messages
        WHEN old.words IS NOT NULL AND old.words IS NOT new.words
        BEGIN
            DELETE FROM messages_fts WHERE rowid = old.words;
        END;
        """,
    )
    from ..sqlite import SQLiteTx  # the store's own writer of a message's words

    tx, last = SQLiteTx(cur), 0
    while rows := cur.execute(
        "SELECT rowid, user_id, id, content FROM messages WHERE rowid > ? AND erased_at IS NULL"
        " ORDER BY rowid LIMIT ?",
        (last, MESSAGES_A_READ),
    ).fetchall():
        for _, user_id, message_id, content in rows:
            if words := run_sync(tx.words_of(user_id, message_words(user_id, content))):
                cur.execute(
                    "UPDATE messages SET words = ? WHERE user_id = ? AND id = ?", (words, user_id, message_id)
                )
        last = rows[-1][0]


def _stale_review(cur: Cursor) -> None:
    """The "Still true?" list (mnemo.stale): the person's switch for it (on by default), and
    when each fact was last given to an assistant, to the day (written with the recall log,
    behind the same switch), so that a fact recalled long after the log forgot it is not
    offered as stale; from what the log holds at the upgrade."""
    _script(
        cur,
        """
        ALTER TABLE users ADD COLUMN review_stale INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE facts ADD COLUMN last_recalled_at TEXT;
        UPDATE facts SET last_recalled_at = (
            SELECT max(r.at) FROM recalls r WHERE r.user_id = facts.user_id AND r.fact_id = facts.id
        ) WHERE EXISTS (SELECT 1 FROM recalls r WHERE r.user_id = facts.user_id AND r.fact_id = facts.id);
        """,
    )


def _conversation_switch(cur: Cursor) -> None:
    """A conversation the person asked not to be remembered: its later turns are answered
    (with recall) but neither stored nor learnt from, and backfill leaves it alone."""
    _script(cur, "ALTER TABLE conversations ADD COLUMN remember INTEGER NOT NULL DEFAULT 1;")


def _operator(cur: Cursor) -> None:
    """What the administrator sees and steers: a disabled account (its keys refused until it is
    enabled again), and when each key last worked (to the hour)."""
    _script(
        cur,
        """
        ALTER TABLE users ADD COLUMN disabled_at TEXT;
        ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
        """,
    )


def _recall_log_switch(cur: Cursor) -> None:
    """When the person last turned the recall log off: a recall from before then is never
    recorded, even when its rows, written after the reply, come once the switch is on again."""
    _script(cur, "ALTER TABLE users ADD COLUMN recalls_off_at TEXT;")


MIGRATIONS = [
    Migration(1, "initial", _initial),
    Migration(2, "server", _server),
    Migration(3, "turn_order", _turn_order),
    Migration(4, "backfill", _backfill),
    Migration(5, "vector_per_model", _vector_per_model),
    Migration(6, "common_words", _common_words),
    Migration(7, "user_conversations", _user_conversations),
    Migration(8, "erasure", _erasure),
    Migration(9, "four_digit_years", _four_digit_years),
    Migration(10, "user_keys", _user_keys),
    Migration(11, "forgetting", _forgetting),
    Migration(12, "operations", _operations),
    Migration(13, "turn_states", _turn_states),
    Migration(14, "erase_everything", _erase_everything),
    Migration(15, "recalls", _recalls),
    Migration(16, "sensitive_gate", _sensitive_gate),
    Migration(17, "token_budgets", _token_budgets),
    Migration(18, "citus", _citus),
    Migration(19, "routed_lexical", _routed_lexical),
    Migration(20, "time_indexes", _time_indexes),
    Migration(21, "fair_claims", _fair_claims),
    Migration(22, "message_words", _message_words),
    Migration(23, "stale_review", _stale_review),
    Migration(24, "conversation_switch", _conversation_switch),
    Migration(25, "operator", _operator),
    Migration(26, "recall_log_switch", _recall_log_switch),
]
