"""Schema history of the PostgreSQL store: the same versions and names as SQLite's (a change
that one store does not need is an empty migration there).

Append new migrations; never edit applied ones. Each receives a psycopg
(synchronous) cursor inside the transaction that also records it. Row-level
security and its exceptions: see postgres_security.py.
"""

from __future__ import annotations

from psycopg import sql

from ..fulltext import message_words
from ..migrate import Cursor, Migration
from ..sql.events import reseal
from ..sql.tx import SyncTx, run_sync
from .postgres_citus import CITUS_MIGRATION, IS_COORDINATOR, PROPAGATE_SETTINGS, distribute
from .postgres_security import (
    APP_ROLE,
    LOCK_NAMESPACE,
    backfill_functions,
    budgeted_claim,
    common_words_functions,
    fair_claim_candidates,
    keyed_claim_function,
    lexical_function,
    operations_functions,
    ordered_claim_function,
    people_functions,
    protect,
    queue_functions,
    rare_words_lexical_function,
    reindex_functions,
    requeue_function,
    routed_functions,
    routed_lexical_function,
)

__all__ = ["APP_ROLE", "LOCK_NAMESPACE", "MIGRATIONS", "PROPAGATE_SETTINGS"]


def _initial(cur: Cursor) -> None:
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute(
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} NOLOGIN;
            END IF;
            -- the store's connections SET ROLE to it: from PostgreSQL 16 on, a
            -- role that made it with CREATEROLE is its admin but may not SET it
            IF current_setting('server_version_num')::int >= 160000 THEN
                IF NOT pg_has_role(current_user, '{APP_ROLE}', 'SET') THEN
                    EXECUTE format('GRANT {APP_ROLE} TO %I WITH SET TRUE', current_user);
                END IF;
            ELSIF NOT pg_has_role(current_user, '{APP_ROLE}', 'MEMBER') THEN
                EXECUTE format('GRANT {APP_ROLE} TO %I', current_user);
            END IF;
        END $$
        """
    )
    schema = cur.execute("SELECT current_schema()").fetchone()[0]
    cur.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO " + APP_ROLE).format(sql.Identifier(schema)))
    cur.execute(
        """
        CREATE TABLE users (
            id text PRIMARY KEY,
            name text NOT NULL UNIQUE,
            created_at timestamptz NOT NULL,
            memory_enabled boolean,
            review_policy text NOT NULL DEFAULT 'auto'
        );
        CREATE TABLE agents (
            id text PRIMARY KEY,
            user_id text NOT NULL REFERENCES users(id),
            name text NOT NULL,
            private boolean NOT NULL DEFAULT false,
            reads_default boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL,
            UNIQUE (user_id, name)
        );
        CREATE TABLE settings (key text PRIMARY KEY, value text NOT NULL);
        CREATE TABLE conversations (
            id text PRIMARY KEY,
            user_id text NOT NULL,
            agent_id text,
            created_at timestamptz NOT NULL
        );
        CREATE TABLE messages (
            id text PRIMARY KEY,
            conversation_id text NOT NULL REFERENCES conversations(id),
            user_id text NOT NULL,
            role text NOT NULL,
            content text NOT NULL,
            created_at timestamptz NOT NULL
        );
        CREATE INDEX messages_conversation ON messages (user_id, conversation_id, created_at);
        CREATE TABLE facts (
            rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id text NOT NULL UNIQUE,
            user_id text NOT NULL,
            agent_id text,
            text text NOT NULL,
            text_hash text,
            category text NOT NULL,
            status text NOT NULL,
            confidence double precision NOT NULL,
            created_at timestamptz NOT NULL,
            recorded_at timestamptz,
            retired_at timestamptz,
            valid_from timestamptz,
            valid_to timestamptz,
            supersedes text,
            superseded_by text,
            version integer NOT NULL,
            source jsonb NOT NULL,
            embedding_model text,
            pinned boolean NOT NULL DEFAULT false,
            mentions integer NOT NULL DEFAULT 1,
            last_seen_at timestamptz,
            purged boolean NOT NULL DEFAULT false,
            -- the lexical index holds active facts only, as SQLite's facts_fts does
            -- (and so the planner's statistics count words over active facts)
            tsv tsvector GENERATED ALWAYS AS (
                CASE WHEN status = 'active' AND NOT purged
                THEN to_tsvector('english', text) ELSE ''::tsvector END
            ) STORED
        );
        CREATE INDEX facts_recent ON facts (user_id, status, last_seen_at);
        CREATE INDEX facts_hash ON facts (user_id, text_hash);
        CREATE INDEX facts_pinned ON facts (user_id) WHERE pinned;
        CREATE INDEX facts_listed ON facts (user_id, created_at DESC, rowid DESC);
        CREATE INDEX facts_words ON facts USING gin (tsv);
        -- Vectors live beside the facts, not in them: the fact rows that lists
        -- and lexical search read stay small, a fact may have no vector, and
        -- re-embedding rewrites only this table. `active` and `agent_key`
        -- ('' = the default agent) mirror the fact, so that a search filters
        -- here without a join. The column has no fixed dimension (models
        -- differ); the HNSW index is a partial expression index per dimension,
        -- `(embedding::vector(N)) WHERE dims = N`, built when first needed
        -- (see store/postgres_search.py).
        CREATE TABLE fact_vectors (
            fact_rowid bigint PRIMARY KEY REFERENCES facts(rowid),
            user_id text NOT NULL,
            model text NOT NULL,
            dims integer NOT NULL,
            active boolean NOT NULL,
            agent_key text NOT NULL,
            embedding vector NOT NULL
        );
        CREATE INDEX fact_vectors_owner ON fact_vectors (user_id, model);
        -- kept by each commit, so that a search need not count: how many
        -- vectors a user has per model (picks exact scan or HNSW) and how many
        -- active facts (the N of the lexical arm's BM25)
        CREATE TABLE vector_counts (
            user_id text NOT NULL,
            model text NOT NULL,
            n bigint NOT NULL,
            PRIMARY KEY (user_id, model)
        );
        CREATE TABLE fact_counts (user_id text PRIMARY KEY, active bigint NOT NULL);
        -- `at` is the exact ISO text the event's digest covers (a timestamptz
        -- would keep the instant but not the offset it was written with)
        CREATE TABLE fact_events (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at text NOT NULL,
            user_id text NOT NULL,
            fact_id text NOT NULL,
            action text NOT NULL,
            actor text NOT NULL,
            reason text,
            before text,
            after text,
            digest text NOT NULL,
            prev_hash text NOT NULL,
            hash text NOT NULL,
            redacted boolean NOT NULL DEFAULT false
        );
        CREATE INDEX fact_events_user ON fact_events (user_id, seq);
        CREATE INDEX fact_events_fact ON fact_events (user_id, fact_id, seq);
        CREATE FUNCTION fact_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'fact_events is append-only'; END $$;
        CREATE TRIGGER fact_events_no_delete BEFORE DELETE OR TRUNCATE ON fact_events
        FOR EACH STATEMENT EXECUTE FUNCTION fact_events_append_only();
        """
    )
    cur.execute(f"GRANT SELECT ON schema_migrations TO {APP_ROLE}")
    protect(cur, "users", "SELECT, INSERT, UPDATE", owner="id")
    cur.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON settings TO {APP_ROLE}")
    protect(cur, "agents", "SELECT, INSERT, UPDATE")
    protect(cur, "conversations", "SELECT, INSERT")
    protect(cur, "messages", "SELECT, INSERT")
    protect(cur, "facts", "SELECT, INSERT, UPDATE")
    protect(cur, "fact_vectors", "SELECT, INSERT, UPDATE, DELETE")
    protect(cur, "vector_counts", "SELECT, INSERT, UPDATE")
    protect(cur, "fact_counts", "SELECT, INSERT, UPDATE")
    protect(cur, "fact_events", "SELECT, INSERT, UPDATE")  # UPDATE: a purge redacts; never DELETE
    lexical_function(cur)
    people_functions(cur)


def _server(cur: Cursor) -> None:
    """API keys, agents' settings, and the durable queue of turns to learn from."""
    cur.execute(
        """
        CREATE TABLE api_keys (
            id text PRIMARY KEY,
            user_id text NOT NULL REFERENCES users(id),
            name text NOT NULL,
            secret_hash text NOT NULL,
            created_at timestamptz NOT NULL,
            revoked_at timestamptz
        );
        CREATE INDEX api_keys_user ON api_keys (user_id);
        ALTER TABLE agents ADD COLUMN persona text;
        ALTER TABLE agents ADD COLUMN upstream_model text;
        ALTER TABLE agents ADD COLUMN deleted_at timestamptz;
        CREATE TABLE jobs (
            id text PRIMARY KEY,
            user_id text NOT NULL REFERENCES users(id),
            agent_id text,
            conversation_id text NOT NULL,
            message_ids jsonb NOT NULL,
            automation boolean NOT NULL DEFAULT false,
            turn_at timestamptz NOT NULL,
            status text NOT NULL,
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at timestamptz NOT NULL,
            lease_until timestamptz,
            claimed_by text,
            last_error text,
            result jsonb,
            created_at timestamptz NOT NULL,
            finished_at timestamptz
        );
        CREATE INDEX jobs_due ON jobs (status, next_attempt_at);
        CREATE INDEX jobs_user ON jobs (user_id, created_at);
        """
    )
    protect(cur, "api_keys", "SELECT, INSERT, UPDATE")
    protect(cur, "jobs", "SELECT, INSERT, UPDATE")
    queue_functions(cur)


def _turn_order(cur: Cursor) -> None:
    """Each person's turns are learnt from one at a time, in the order they came."""
    cur.execute("CREATE INDEX jobs_open ON jobs (user_id, id) WHERE status IN ('pending', 'claimed')")
    ordered_claim_function(cur)


def _backfill(cur: Cursor) -> None:
    """Which turns `mnemo backfill` has learnt from, each marked in the same transaction as its
    facts (see BackfillMark); and messages found by when they were said."""
    cur.execute(
        """
        -- one row per turn learnt from, named by the user message that opens it
        CREATE TABLE backfill_progress (
            user_id text NOT NULL REFERENCES users(id),
            conversation_id text NOT NULL,
            turn_id text NOT NULL,
            run_id text NOT NULL,
            said_at timestamptz NOT NULL,
            processed_at timestamptz NOT NULL,
            PRIMARY KEY (user_id, conversation_id, turn_id)
        );
        CREATE INDEX messages_said ON messages (user_id, created_at);
        -- the turns never learnt from, which backfill leaves out
        CREATE INDEX jobs_automation ON jobs (user_id, conversation_id) WHERE automation;
        """
    )
    protect(cur, "backfill_progress", "SELECT, INSERT, UPDATE")
    backfill_functions(cur)


def _vector_per_model(cur: Cursor) -> None:
    """A fact may hold a vector per embedding model, so that `mnemo reindex` can write the new
    model's vectors beside the old ones while recall keeps reading the old."""
    cur.execute(
        "ALTER TABLE fact_vectors DROP CONSTRAINT fact_vectors_pkey, ADD PRIMARY KEY (fact_rowid, model)"
    )
    reindex_functions(cur)


def _common_words(cur: Cursor) -> None:
    """The lexical search's common-word list is read once a while by the store, not in every
    search."""
    common_words_functions(cur)


def _user_conversations(cur: Cursor) -> None:
    """Conversation and message ids are each user's own: keyed by (user_id, id), so that an id
    one person chose first can neither block another person's turns nor tell them it exists."""
    cur.execute(
        """
        ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;
        ALTER TABLE conversations DROP CONSTRAINT conversations_pkey, ADD PRIMARY KEY (user_id, id);
        ALTER TABLE messages DROP CONSTRAINT messages_pkey, ADD PRIMARY KEY (user_id, id),
            ADD FOREIGN KEY (user_id, conversation_id) REFERENCES conversations (user_id, id);
        """
    )


def _erasure(cur: Cursor) -> None:
    """Each event's digest covers a random salt of its own, which a purge erases with the text
    (see mnemo.audit). The events already redacted have digests of their erased text: they get
    random ones, and their users' logs are chained again from the first of them."""
    cur.execute("ALTER TABLE fact_events ADD COLUMN salt text")
    # the purged fact whose erasure took this event's reason (it told of that fact)
    cur.execute("ALTER TABLE fact_events ADD COLUMN redacted_for text")
    # user by user, as every statement on a per-user table is (a purged fact stays a fact)
    for (user_id,) in cur.execute("SELECT * FROM mnemo_users_with_facts()").fetchall():
        seqs = cur.execute(
            "SELECT seq FROM fact_events WHERE user_id = %s AND redacted", (user_id,)
        ).fetchall()
        if seqs:
            run_sync(reseal(SyncTx(cur, format_params=True), user_id, {seq for (seq,) in seqs}))


def _four_digit_years(cur: Cursor) -> None:
    """SQLite's times before the year 1000 were written with fewer than four digits; PostgreSQL
    keeps times as timestamptz, so nothing changes here. Kept, so that a version names the same
    change on both stores."""


def _user_keys(cur: Cursor) -> None:
    """Every per-user table's primary key includes user_id, so that the tables can be
    distributed by it (Citus requires the distribution column in every primary key and unique
    constraint, and in a foreign key between two distributed tables): facts (user_id, rowid)
    and unique (user_id, id), fact_vectors (user_id, fact_rowid, model) with its foreign key
    (user_id, fact_rowid) on facts, fact_events (user_id, seq), jobs and api_keys (user_id, id).
    Conversations and messages are keyed so since version 7, the counters and backfill_progress
    since they were made. users and agents stay keyed by id: reference tables in that plan
    (docs/scaling.md).

    rowid and seq keep their identities, so every fact keeps its rowid (the vectors' and the
    lexical search's name for it); fact, job and key ids are now each user's own, as
    conversation ids are. The lookups by id alone that remain, before the user is known (a
    key's owner, a claimed job's owner), have an index of their own, not unique: a
    distributed table cannot hold one, and the ids are random."""
    cur.execute(
        """
        ALTER TABLE fact_vectors DROP CONSTRAINT fact_vectors_fact_rowid_fkey;
        ALTER TABLE facts DROP CONSTRAINT facts_pkey, ADD PRIMARY KEY (user_id, rowid),
            DROP CONSTRAINT facts_id_key, ADD UNIQUE (user_id, id);
        -- the constraint keeps its name, fact_vectors_pkey, which the commit's upsert names
        ALTER TABLE fact_vectors DROP CONSTRAINT fact_vectors_pkey,
            ADD PRIMARY KEY (user_id, fact_rowid, model),
            ADD FOREIGN KEY (user_id, fact_rowid) REFERENCES facts (user_id, rowid);
        ALTER TABLE fact_events DROP CONSTRAINT fact_events_pkey, ADD PRIMARY KEY (user_id, seq);
        DROP INDEX fact_events_user;
        ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD PRIMARY KEY (user_id, id);
        CREATE INDEX jobs_claimed ON jobs (id) WHERE status = 'claimed';
        ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey, ADD PRIMARY KEY (user_id, id);
        DROP INDEX api_keys_user;
        CREATE INDEX api_keys_id ON api_keys (id);
        """
    )
    keyed_claim_function(cur)


def _forgetting(cur: Cursor) -> None:
    """Erasure reaches the messages a fact was learnt from (their text is erased, the time it
    was erased stays) and whole conversations, keeps a keyed hash of every erased text so that
    nothing erased is learnt again, and keeps the signed receipt of each erasure."""
    cur.execute(
        """
        ALTER TABLE messages ADD COLUMN erased_at timestamptz;
        CREATE TABLE erased_texts (
            user_id text NOT NULL REFERENCES users(id),
            hash text NOT NULL,
            erased_at timestamptz NOT NULL,
            PRIMARY KEY (user_id, hash)
        );
        CREATE TABLE receipts (
            user_id text NOT NULL REFERENCES users(id),
            id text NOT NULL,
            at timestamptz NOT NULL,
            kind text NOT NULL,
            body jsonb NOT NULL,
            signature text NOT NULL,
            PRIMARY KEY (user_id, id)
        );
        CREATE INDEX receipts_at ON receipts (user_id, at);
        """
    )
    protect(cur, "erased_texts", "SELECT, INSERT, DELETE")
    protect(cur, "receipts", "SELECT, INSERT")
    # an erasure redacts messages and removes conversations with their jobs and marks
    for table, grants in {
        "messages": "UPDATE, DELETE",
        "conversations": "DELETE",
        "jobs": "DELETE",
        "backfill_progress": "DELETE",
    }.items():
        cur.execute(sql.SQL("GRANT " + grants + " ON {} TO " + APP_ROLE).format(sql.Identifier(table)))


def _operations(cur: Cursor) -> None:
    """The heartbeats of the job workers, which /readyz reads (server-wide, like settings:
    outside the wall, a worker's name is no one's data), and the questions across users that
    running a server asks: who is here (`mnemo users list`) and how many jobs are in each state
    (/metrics)."""
    cur.execute("CREATE TABLE worker_heartbeats (worker text PRIMARY KEY, beat_at timestamptz NOT NULL)")
    cur.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON worker_heartbeats TO {APP_ROLE}")
    operations_functions(cur)


def _turn_states(cur: Cursor) -> None:
    """A turn a person can follow: learnt without a chat model (waiting, queued again by a
    worker that has one: mnemo_requeue_waiting), or skipped, each a status of its own. Jobs
    skipped before were done with the reason in their result: they are skipped now."""
    cur.execute("CREATE INDEX jobs_waiting ON jobs (id) WHERE status = 'waiting'")
    # every user with jobs has conversations (a job's messages are stored with it)
    for (user_id,) in cur.execute("SELECT * FROM mnemo_users_with_conversations()").fetchall():
        cur.execute(
            """
            UPDATE jobs SET status = 'skipped', result = result || jsonb_build_object('skip_reason',
                CASE result->>'skipped'
                    WHEN 'automation turns never write memory' THEN 'automation'
                    WHEN 'its agent was deleted' THEN 'agent_deleted' ELSE 'memory_off' END)
            WHERE user_id = %s AND status = 'done' AND result->>'skipped' IS NOT NULL
            """,
            (user_id,),
        )
    requeue_function(cur)


def _erase_everything(cur: Cursor) -> None:
    """Erasing all of a person's data deletes their API keys (but the one in use)."""
    cur.execute(f"GRANT DELETE ON api_keys TO {APP_ROLE}")


def _recalls(cur: Cursor) -> None:
    """Which assistant recalled which fact, when, and through which face: a row per fact per
    recall (a recall's rows share its id), kept MNEMO_RECALL_LOG_DAYS; the person's switch
    (record_recalls, on by default) stops it. Keyed by the fact first, so that a fact's page
    reads its own rows; by time for the rows past keeping."""
    cur.execute(
        """
        ALTER TABLE users ADD COLUMN record_recalls boolean NOT NULL DEFAULT true;
        CREATE TABLE recalls (
            user_id text NOT NULL REFERENCES users(id),
            fact_id text NOT NULL,
            at timestamptz NOT NULL,
            recall_id text NOT NULL,
            agent_id text NOT NULL,
            via text NOT NULL,
            PRIMARY KEY (user_id, fact_id, at, recall_id)
        );
        CREATE INDEX recalls_at ON recalls (user_id, at);
        """
    )
    protect(cur, "recalls", "SELECT, INSERT, DELETE")


def _token_budgets(cur: Cursor) -> None:
    """The chat model's tokens spent on learning, per user per UTC day (a day is its ISO date),
    and a user's own daily budget set by the administrator (none: the server's). A turn whose
    person spent the day's budget waits over_budget until the next UTC midnight: one still open,
    in the order of a person's turns (mnemo_claim_job)."""
    cur.execute(
        """
        CREATE TABLE token_usage (
            user_id text NOT NULL REFERENCES users(id),
            day text NOT NULL,
            prompt_tokens bigint NOT NULL,
            completion_tokens bigint NOT NULL,
            calls bigint NOT NULL,
            unreported_calls bigint NOT NULL,
            PRIMARY KEY (user_id, day)
        );
        CREATE TABLE token_budgets (
            user_id text PRIMARY KEY REFERENCES users(id),
            daily_tokens bigint NOT NULL
        );
        DROP INDEX jobs_open;
        CREATE INDEX jobs_open ON jobs (user_id, id) WHERE status IN ('pending', 'claimed', 'over_budget');
        """
    )
    protect(cur, "token_usage", "SELECT, INSERT, UPDATE")
    protect(cur, "token_budgets", "SELECT, INSERT, UPDATE, DELETE")
    budgeted_claim(cur)


def _sensitive_gate(cur: Cursor) -> None:
    """The person's choices for the sensitive-data gate (mnemo.sensitive): a JSON object of
    category → action holding only what differs from the defaults ({}: the defaults)."""
    cur.execute("ALTER TABLE users ADD COLUMN sensitive_gate jsonb NOT NULL DEFAULT '{}'")


def _citus(cur: Cursor) -> None:
    """On a Citus coordinator, every per-user table is distributed by user_id and colocated,
    users, agents and settings are reference tables, and the application role may log in (the
    workers see it as the coordinator's connections' role): see postgres_citus.py. On plain
    PostgreSQL the tables stay as they are. On both, the questions across users and the job
    claim take forms a coordinator can plan (see routed_functions)."""
    routed_functions(cur)
    distribute(cur)


def _time_indexes(cur: Cursor) -> None:
    """The time arm's two searches each walk an index of their own: facts said in a window
    (created_at) and facts that became true in it (valid_from). Without them, one search of
    a window read every active fact of the person (250 ms at 100k facts)."""
    # one command a call: Citus refuses several in one
    cur.execute("CREATE INDEX facts_said ON facts (user_id, status, created_at)")
    cur.execute("CREATE INDEX facts_valid ON facts (user_id, status, valid_from)")


def _fair_claims(cur: Cursor) -> None:
    """Workers take people in turn (the one served longest ago first): each job carries when
    its person last had a turn claimed (see jobs.stamp_claim), that latest stamp of a person
    is one index step away, and the claim's candidates come in that order."""
    if cur.execute(IS_COORDINATOR).fetchone()[0]:
        # one connection a node, so that the function can be replaced after the table changed
        cur.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    # one command a call: Citus refuses several in one
    cur.execute("ALTER TABLE jobs ADD COLUMN user_claimed_at timestamptz")
    cur.execute("CREATE INDEX jobs_user_claimed ON jobs (user_id, user_claimed_at)")
    fair_claim_candidates(cur)


MESSAGES_A_READ = 1000  # how many messages a migration reads at once


def _message_words(cur: Cursor) -> None:
    """The words of each message (fulltext.message_words) in a column of its own, an array
    under a GIN index, so that an erasure's plan and "erase about" read only the messages that
    hold a text's words. Each word is a hash keyed by the person: an erasure empties the
    column with the text. Person by person, as every statement on a per-user table is."""
    # one command a call: Citus refuses several in one
    cur.execute("ALTER TABLE messages ADD COLUMN words text[]")
    cur.execute("CREATE INDEX messages_words ON messages USING gin (words)")
    for (user_id,) in cur.execute("SELECT * FROM mnemo_users_with_conversations()").fetchall():
        last = ""
        while rows := cur.execute(
            "SELECT id, content FROM messages WHERE user_id = %s AND erased_at IS NULL AND id > %s"
            " ORDER BY id LIMIT %s",
            (user_id, last, MESSAGES_A_READ),
        ).fetchall():
            words = [(list(dict.fromkeys(message_words(user_id, content))), mid) for mid, content in rows]
            cur.executemany(
                "UPDATE messages SET words = %s WHERE user_id = %s AND id = %s",
                [(w, user_id, mid) for w, mid in words if w],
            )
            last = rows[-1][0]


def _stale_review(cur: Cursor) -> None:
    """The "Still true?" list (mnemo.stale): the person's switch for it (on by default), and
    when each fact was last given to an assistant, to the day (written with the recall log,
    behind the same switch), so that a fact recalled long after the log forgot it is not
    offered as stale; from what the log holds at the upgrade, person by person."""
    # one command a call: Citus refuses several in one
    cur.execute("ALTER TABLE users ADD COLUMN review_stale boolean NOT NULL DEFAULT true")
    cur.execute("ALTER TABLE facts ADD COLUMN last_recalled_at timestamptz")
    for (user_id,) in cur.execute("SELECT * FROM mnemo_user_ids()").fetchall():
        cur.execute(
            "UPDATE facts f SET last_recalled_at = r.at FROM (SELECT fact_id, max(at) AS at FROM recalls"
            " WHERE user_id = %s GROUP BY fact_id) r WHERE f.user_id = %s AND f.id = r.fact_id",
            (user_id, user_id),
        )


def _conversation_switch(cur: Cursor) -> None:
    """A conversation the person asked not to be remembered: its later turns are answered
    (with recall) but neither stored nor learnt from, and backfill leaves it alone."""
    cur.execute("ALTER TABLE conversations ADD COLUMN remember boolean NOT NULL DEFAULT true")
    # the switch is the one column of a conversation the application changes (its own rows only)
    cur.execute(f"GRANT UPDATE (remember) ON conversations TO {APP_ROLE}")


def _operator(cur: Cursor) -> None:
    """What the administrator sees and steers: a disabled account (its keys refused until it is
    enabled again), and when each key last worked (to the hour)."""
    # one command a call: Citus refuses several in one
    cur.execute("ALTER TABLE users ADD COLUMN disabled_at timestamptz")
    cur.execute("ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz")


def _recall_log_switch(cur: Cursor) -> None:
    """When the person last turned the recall log off: a recall from before then is never
    recorded, even when its rows, written after the reply, come once the switch is on again."""
    cur.execute("ALTER TABLE users ADD COLUMN recalls_off_at timestamptz")


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
    Migration(CITUS_MIGRATION, "citus", _citus),
    Migration(19, "routed_lexical", routed_lexical_function),
    Migration(20, "time_indexes", _time_indexes),
    Migration(21, "fair_claims", _fair_claims),
    Migration(22, "message_words", _message_words),
    Migration(23, "stale_review", _stale_review),
    Migration(24, "conversation_switch", _conversation_switch),
    Migration(25, "operator", _operator),
    Migration(26, "recall_log_switch", _recall_log_switch),
    Migration(27, "rare_words_first", rare_words_lexical_function),
]
