"""The wall between users in the PostgreSQL schema, and its few, narrow doors.

Row-level security is the second wall between users: every table holding one
user's rows (users itself included) has a policy matching the owner's id to
the transaction's `mnemo.user_id` setting, and the store runs every query as
APP_ROLE, which neither owns the tables nor bypasses RLS. A query that forgot
its scope sees no rows. The few questions that must look across users (who is
called this name, is anyone here yet, which job is next, whose API key is
this id) and the lexical search (see `lexical_function`) are SECURITY DEFINER
functions owned by the migrating role, each answering no more than it must.
The owner is not subject to the policies (no FORCE ROW LEVEL SECURITY): it
only runs the migrations, these functions, and the HNSW index builds.
Only `settings` and `worker_heartbeats` (server-wide) are outside the wall.

Part of the migrations (store/migrations/postgres.py): never edit what an
applied migration ran; add new functions in new migrations.
"""

from __future__ import annotations

from psycopg import sql

from ..migrate import Cursor

APP_ROLE = "mnemo_app"
# the claim's rules over `jobs d` (since migration 17): a job is due when it is pending (or over
# budget) and its time has come, or its worker's lease ran out; it is held back while an earlier
# job of its user is open (`now`: the claim's time)
CLAIM_DUE = (
    "(d.status IN ('pending', 'over_budget') AND d.next_attempt_at <= now)"
    " OR (d.status = 'claimed' AND d.lease_until < now)"
)
CLAIM_HELD = (
    "SELECT FROM jobs e WHERE e.user_id = d.user_id AND e.id < d.id"
    " AND (e.status IN ('pending', 'claimed') OR (e.status = 'over_budget' AND e.next_attempt_at <= now))"
)
LOCK_NAMESPACE = 0x6D6E656D  # 'mnem': the first key of mnemo's two-key advisory locks


def protect(cur: Cursor, table: str, grants: str, owner: str = "user_id") -> None:
    """Give APP_ROLE `grants` on `table`, only ever on the rows of the transaction's user
    (the rows whose `owner` column holds the user's id)."""
    t, o = sql.Identifier(table), sql.Identifier(owner)
    policy = "CREATE POLICY owner_only ON {} USING ({} = current_setting('mnemo.user_id', true))"
    cur.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(t))
    cur.execute(sql.SQL(policy).format(t, o))
    cur.execute(sql.SQL("GRANT " + grants + " ON {} TO " + APP_ROLE).format(t))


def definer(cur: Cursor, signature: str) -> None:
    """A SECURITY DEFINER function: callable by APP_ROLE only, with a search_path it cannot change."""
    schema = cur.execute("SELECT current_schema()").fetchone()[0]
    cur.execute(
        sql.SQL(
            "ALTER FUNCTION " + signature + " SECURITY DEFINER SET search_path = pg_catalog, {}, pg_temp"
        ).format(sql.Identifier(schema))
    )
    cur.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
    cur.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {APP_ROLE}")


# the transaction's user, as the row-level policies read it
_SETTING = "current_setting('mnemo.user_id', true)"


# the lexical search's matches among the user's active facts and their postings, and its
# BM25 score over them (`p`: the postings scored, `d`: their document frequencies, `s`: N and
# the average length): written once for every version of mnemo_lexical
def _matches(user: str) -> str:
    """The matches among the facts of `user`: what follows `f.user_id =` in their condition."""
    return _MATCHES.replace("{user}", user)


_MATCHES = """hits AS MATERIALIZED (
                SELECT f.rowid, f.tsv FROM facts f, query
                WHERE f.user_id = {user}
                  AND f.tsv @@ query.q AND f.status = 'active'
                  AND (agents IS NULL OR COALESCE(f.agent_id, '') = ANY (agents))
            ), postings AS (
                SELECT h.rowid, t.lexeme, cardinality(t.positions) AS tf, length(h.tsv) AS len
                FROM hits h, query, unnest(h.tsv) AS t
                WHERE t.lexeme = ANY (query.lexemes)
            ), df AS (
                SELECT lexeme, count(*) AS n FROM postings GROUP BY lexeme
            )"""
_BM25 = """            SELECT p.rowid,
                   sum(greatest(ln((s.n - d.n + 0.5) / (d.n + 0.5)), 1e-6)
                       * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.len / s.avg_len)))::double precision"""


def lexical_function(cur: Cursor) -> None:
    """Full-text search over the transaction's user's active facts, ranked by BM25.

    Why a definer function: `@@` is not leakproof, so under a row-level policy
    PostgreSQL refuses to use it as an index condition (it may not run before
    the policy's check) and would scan all of the user's rows. Run as the
    owner, the GIN index is usable; the user check is restated here.

    Words found in more than `common_share` of all facts are dropped on a store
    of at least `small_store` facts, as in SQLite (see store/fulltext.py). The
    document frequencies come from the planner's statistics of `tsv`
    (most_common_elems, refreshed by autovacuum's ANALYZE), which cost nothing
    to read; a word the statistics have not seen yet is kept.

    Ranking: ts_rank_cd knows nothing of how rare a word is, so a fact sharing
    two everyday words with the query would beat one sharing its one rare name.
    The score is therefore FTS5's BM25 (k1 = 1.2, b = 0.75) over the user's own
    active facts: document frequencies are counted among the matches (every
    fact holding a query word matches), N comes from fact_counts, lengths are
    counted in lexemes and averaged over the matches.
    """
    cur.execute(
        f"""
        CREATE FUNCTION mnemo_lexical(
            words text[], agents text[], k integer, common_share double precision, small_store bigint
        ) RETURNS TABLE (fact_rowid bigint, score double precision) LANGUAGE sql STABLE AS $$
            WITH facts_table AS (
                SELECT n.nspname, c.reltuples
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.oid = 'facts'::regclass
            ), common AS (
                SELECT e.lexeme
                FROM facts_table t
                JOIN pg_stats s ON s.schemaname = t.nspname AND s.tablename = 'facts' AND s.attname = 'tsv',
                     unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
                WHERE t.reltuples >= small_store AND e.freq > common_share
            ), kept AS (
                SELECT w FROM unnest(words) AS w
                WHERE NOT EXISTS (
                    SELECT FROM unnest(tsvector_to_array(to_tsvector('english', w))) AS l
                    WHERE l IN (SELECT lexeme FROM common)
                )
            ), query AS (
                SELECT websearch_to_tsquery('english', string_agg(w, ' or ')) AS q,
                       tsvector_to_array(to_tsvector('english', string_agg(w, ' '))) AS lexemes
                FROM kept
            ), {_matches(_SETTING)}, sizes AS (
                SELECT (SELECT active FROM fact_counts
                        WHERE user_id = current_setting('mnemo.user_id', true)) AS n,
                       (SELECT avg(length(tsv)) FROM hits) AS avg_len
            )
{_BM25}
            FROM postings p JOIN df d USING (lexeme), sizes s
            GROUP BY p.rowid
            ORDER BY 2 DESC, p.rowid
            LIMIT k
        $$
        """
    )
    definer(cur, "mnemo_lexical(text[], text[], integer, double precision, bigint)")


def common_words_functions(cur: Cursor) -> None:
    """The lexical search with the common-word list read once and kept by the store, rather
    than read from the planner's statistics inside every search (about 2 ms of each).

    `mnemo_common_words` answers the words (lexemes) found in more than
    `common_share` of all facts, on a store of at least `small_store` facts:
    words only, from the planner's statistics of `tsv`, which ANALYZE refreshes.
    It looks across users by nature, as the statistics do; it names no fact and
    no user. `mnemo_lexical` then takes that list as an argument; the rest of
    its body (the search and its BM25 ranking) is lexical_function's.
    """
    cur.execute(
        f"""
        CREATE FUNCTION mnemo_common_words(common_share double precision, small_store bigint)
        RETURNS text[] LANGUAGE sql STABLE AS $$
            SELECT COALESCE(array_agg(e.lexeme ORDER BY e.lexeme), '{{}}')
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = 'facts' AND s.attname = 'tsv',
                 unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
            WHERE c.oid = 'facts'::regclass AND c.reltuples >= small_store AND e.freq > common_share
        $$;
        DROP FUNCTION mnemo_lexical(text[], text[], integer, double precision, bigint);
        CREATE FUNCTION mnemo_lexical(words text[], agents text[], k integer, common text[])
        RETURNS TABLE (fact_rowid bigint, score double precision) LANGUAGE sql STABLE AS $$
            WITH kept AS (
                SELECT w FROM unnest(words) AS w
                WHERE NOT tsvector_to_array(to_tsvector('english', w)) && common
            ), query AS (
                SELECT websearch_to_tsquery('english', string_agg(w, ' or ')) AS q,
                       tsvector_to_array(to_tsvector('english', string_agg(w, ' '))) AS lexemes
                FROM kept
            ), {_matches(_SETTING)}, sizes AS (
                SELECT (SELECT active FROM fact_counts
                        WHERE user_id = current_setting('mnemo.user_id', true)) AS n,
                       (SELECT avg(length(tsv)) FROM hits) AS avg_len
            )
{_BM25}
            FROM postings p JOIN df d USING (lexeme), sizes s
            GROUP BY p.rowid
            ORDER BY 2 DESC, p.rowid
            LIMIT k
        $$;
        """
    )
    definer(cur, "mnemo_common_words(double precision, bigint)")
    definer(cur, "mnemo_lexical(text[], text[], integer, text[])")


def people_functions(cur: Cursor) -> None:
    """Who a name belongs to, and whether anyone is here yet: asked before any user is known
    (the CLI names its user; a server's first start creates one). Ids and a yes/no only."""
    cur.execute(
        """
        CREATE FUNCTION mnemo_user_named(who text) RETURNS text LANGUAGE sql STABLE AS $$
            SELECT id FROM users WHERE name = who
        $$;
        CREATE FUNCTION mnemo_any_user() RETURNS boolean LANGUAGE sql STABLE AS $$
            SELECT EXISTS (SELECT FROM users)
        $$;
        """
    )
    definer(cur, "mnemo_user_named(text)")
    definer(cur, "mnemo_any_user()")


def queue_functions(cur: Cursor) -> None:
    """The queue is shared by every user: a worker claims the oldest due job,
    whoever's it is, skipping rows another worker has locked (so no job is
    handed out twice and no worker waits on another). It learns the job's owner
    only from the claim, and reads the job under that user."""
    cur.execute(
        """
        CREATE FUNCTION mnemo_claim_job(worker text, now timestamptz, lease_until timestamptz)
        RETURNS TABLE (job_id text, user_id text) LANGUAGE sql VOLATILE AS $$
            UPDATE jobs j
            SET status = 'claimed', claimed_by = worker, lease_until = mnemo_claim_job.lease_until,
                attempts = j.attempts + 1
            WHERE j.id = (
                SELECT d.id FROM jobs d
                WHERE (d.status = 'pending' AND d.next_attempt_at <= now)
                   OR (d.status = 'claimed' AND d.lease_until < now)
                ORDER BY d.next_attempt_at
                LIMIT 1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING j.id, j.user_id
        $$;
        -- whose job a claim is: only while that worker holds it
        CREATE FUNCTION mnemo_claimant(job text, worker text) RETURNS text LANGUAGE sql STABLE AS $$
            SELECT user_id FROM jobs WHERE id = job AND status = 'claimed' AND claimed_by = worker
        $$;
        -- whose API key an id is: a request names the key before anyone knows the user
        CREATE FUNCTION mnemo_key_owner(key text) RETURNS text LANGUAGE sql STABLE AS $$
            SELECT user_id FROM api_keys WHERE id = key
        $$;
        """
    )
    definer(cur, "mnemo_claim_job(text, timestamptz, timestamptz)")
    definer(cur, "mnemo_claimant(text, text)")
    definer(cur, "mnemo_key_owner(text)")


def requeue_function(cur: Cursor) -> None:
    """Every user's jobs learnt without a chat model (waiting), due now: a worker that has a
    model calls it as it starts. It answers a count only."""
    cur.execute(
        """
        CREATE FUNCTION mnemo_requeue_waiting(now timestamptz) RETURNS integer LANGUAGE sql VOLATILE AS $$
            WITH moved AS (
                UPDATE jobs SET status = 'pending', next_attempt_at = now, finished_at = NULL
                WHERE status = 'waiting' RETURNING 1
            )
            SELECT count(*)::integer FROM moved
        $$
        """
    )
    definer(cur, "mnemo_requeue_waiting(timestamptz)")


def ordered_claim_function(cur: Cursor) -> None:
    """The claim of queue_functions, but a job is due only when it is its user's earliest open
    one (jobs.id is a UUIDv7, so time-ordered). Two workers then never learn from one person's
    turns at once — which would let both create the same fact, or apply a later correction
    before the statement it corrects — and turns are learnt from in the order they came. A
    job waiting out a retry holds back that user's later turns; other users are not held."""
    _ordered_claim(cur, "j.id", "d.id")


def keyed_claim_function(cur: Cursor) -> None:
    """The claim of ordered_claim_function, updating the job it chose by its whole key
    (user_id, id), the jobs' primary key since version 10."""
    _ordered_claim(cur, "(j.user_id, j.id)", "d.user_id, d.id")


def budgeted_claim(cur: Cursor) -> None:
    """The claim with turns over budget: one is due at its time (the next UTC midnight), and
    then holds its person's later turns back, as a pending one does; until then it does not,
    so that each later turn is claimed and found over budget too."""
    _ordered_claim(
        cur,
        "(j.user_id, j.id)",
        "d.user_id, d.id",
        due="d.status IN ('pending', 'over_budget')",
        holds="(e.status IN ('pending', 'claimed')"
        " OR (e.status = 'over_budget' AND e.next_attempt_at <= now))",
    )


def _ordered_claim(
    cur: Cursor,
    key: str,
    chosen: str,
    due: str = "d.status = 'pending'",
    holds: str = "e.status IN ('pending', 'claimed')",
) -> None:
    """The ordered claim, which updates the job whose `key` (columns of `jobs j`) is the
    `chosen` (columns of `jobs d`) of the oldest `due` job that no earlier job of its user
    `holds` back."""
    cur.execute(
        f"""
        CREATE OR REPLACE FUNCTION mnemo_claim_job(worker text, now timestamptz, lease_until timestamptz)
        RETURNS TABLE (job_id text, user_id text) LANGUAGE sql VOLATILE AS $$
            UPDATE jobs j
            SET status = 'claimed', claimed_by = worker, lease_until = mnemo_claim_job.lease_until,
                attempts = j.attempts + 1
            WHERE {key} = (
                SELECT {chosen} FROM jobs d
                WHERE (({due} AND d.next_attempt_at <= now)
                       OR (d.status = 'claimed' AND d.lease_until < now))
                  AND NOT EXISTS (
                      SELECT FROM jobs e
                      WHERE e.user_id = d.user_id AND e.id < d.id AND {holds})
                ORDER BY d.next_attempt_at
                LIMIT 1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING j.id, j.user_id
        $$;
        """
    )
    definer(cur, "mnemo_claim_job(text, timestamptz, timestamptz)")


def backfill_functions(cur: Cursor) -> None:
    """Who has conversations to learn from: `mnemo backfill` without --users walks everyone's.
    Answers ids only, in name order; each user's conversations are then read as that user."""
    cur.execute(
        """
        CREATE FUNCTION mnemo_users_with_conversations() RETURNS SETOF text LANGUAGE sql STABLE AS $$
            SELECT u.id FROM users u
            WHERE EXISTS (SELECT FROM conversations c WHERE c.user_id = u.id)
            ORDER BY u.name
        $$;
        """
    )
    definer(cur, "mnemo_users_with_conversations()")


def reindex_functions(cur: Cursor) -> None:
    """Who has facts: `mnemo reindex` without --users walks everyone's. Answers ids only, in
    name order; each user's facts are then read as that user."""
    cur.execute(
        """
        CREATE FUNCTION mnemo_users_with_facts() RETURNS SETOF text LANGUAGE sql STABLE AS $$
            SELECT u.id FROM users u
            WHERE EXISTS (SELECT FROM facts f WHERE f.user_id = u.id)
            ORDER BY u.name
        $$;
        """
    )
    definer(cur, "mnemo_users_with_facts()")


def operations_functions(cur: Cursor) -> None:
    """Everyone's ids, in name order (each user is then read as that user), and the number of
    jobs in each state, whoever's they are: counts only."""
    cur.execute(
        """
        CREATE FUNCTION mnemo_user_ids() RETURNS SETOF text LANGUAGE sql STABLE AS $$
            SELECT id FROM users ORDER BY name
        $$;
        CREATE FUNCTION mnemo_job_counts() RETURNS TABLE (status text, jobs bigint)
        LANGUAGE sql STABLE AS $$
            SELECT status, count(*) FROM jobs GROUP BY status
        $$;
        """
    )
    definer(cur, "mnemo_user_ids()")
    definer(cur, "mnemo_job_counts()")


CLAIM_OF = "mnemo_claim_job_of(text, text, timestamptz, timestamptz)"


def routed_functions(cur: Cursor) -> None:
    """The questions across users, in forms a Citus coordinator can plan (and the same on plain
    PostgreSQL).

    - Who has facts, or conversations: a semi-join (`IN`) on the users' ids, not a correlated
      EXISTS, which Citus cannot plan beside a reference table.
    - The job claim in two steps. `mnemo_claim_candidates` answers, without locking anything,
      the users whose earliest open job is due, oldest due first (ids only): a lock over every
      shard is what Citus cannot take (FOR UPDATE on a multi-shard query). The store then
      claims one of them as that user, in a statement pinned to them (FOR UPDATE SKIP LOCKED,
      routed to their shard), which applies the same rules again: a job is due only when it
      is its user's earliest open one, and a job another worker holds is skipped. The
      one-statement claim of every user, mnemo_claim_job, goes.
    """
    cur.execute(
        f"""
        CREATE OR REPLACE FUNCTION mnemo_users_with_facts() RETURNS SETOF text LANGUAGE sql STABLE AS $$
            SELECT u.id FROM users u WHERE u.id IN (SELECT f.user_id FROM facts f) ORDER BY u.name
        $$;
        CREATE OR REPLACE FUNCTION mnemo_users_with_conversations() RETURNS SETOF text
        LANGUAGE sql STABLE AS $$
            SELECT u.id FROM users u WHERE u.id IN (SELECT c.user_id FROM conversations c) ORDER BY u.name
        $$;
        CREATE FUNCTION mnemo_claim_candidates(now timestamptz, n integer) RETURNS SETOF text
        LANGUAGE sql STABLE AS $$
            SELECT d.user_id FROM jobs d
            WHERE ({CLAIM_DUE}) AND NOT EXISTS ({CLAIM_HELD})
            ORDER BY d.next_attempt_at
            LIMIT n
        $$;
        -- run as the caller (the application role, inside the user it entered), not the owner
        CREATE FUNCTION mnemo_claim_job_of(who text, worker text, now timestamptz, lease_until timestamptz)
        RETURNS text LANGUAGE sql VOLATILE AS $$
            UPDATE jobs j
            SET status = 'claimed', claimed_by = worker, lease_until = mnemo_claim_job_of.lease_until,
                attempts = j.attempts + 1
            WHERE j.user_id = who AND j.id = (
                SELECT d.id FROM jobs d
                WHERE d.user_id = who AND ({CLAIM_DUE}) AND NOT EXISTS ({CLAIM_HELD})
                ORDER BY d.next_attempt_at
                LIMIT 1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING j.id
        $$;
        DROP FUNCTION mnemo_claim_job(text, timestamptz, timestamptz);
        """
    )
    cur.execute(f"REVOKE ALL ON FUNCTION {CLAIM_OF} FROM PUBLIC")
    cur.execute(f"GRANT EXECUTE ON FUNCTION {CLAIM_OF} TO {APP_ROLE}")
    definer(cur, "mnemo_users_with_facts()")
    definer(cur, "mnemo_users_with_conversations()")
    definer(cur, "mnemo_claim_candidates(timestamptz, integer)")
    own_statistics_functions(cur)


def _own_counts_lexical(user: str) -> str:
    """mnemo_lexical's body since migration 18, over the facts of `user` (what follows
    `user_id =` in the conditions on facts and fact_counts): the common words are those of
    that user's own facts (fact_counts)."""
    return f"""
            WITH query AS (
                SELECT websearch_to_tsquery('english', string_agg(w, ' or ')) AS q,
                       tsvector_to_array(to_tsvector('english', string_agg(w, ' '))) AS lexemes
                FROM unnest(words) AS w
            ), {_matches(user)}, facts_n AS (
                SELECT active AS n FROM fact_counts WHERE user_id = {user}
            ), kept AS (
                SELECT p.* FROM postings p JOIN df d USING (lexeme)
                WHERE NOT (d.n > common_share * COALESCE((SELECT n FROM facts_n), 0)
                           AND COALESCE((SELECT n FROM facts_n), 0) >= small_store)
            ), sizes AS (
                SELECT (SELECT n FROM facts_n) AS n,
                       (SELECT avg(len) FROM (SELECT DISTINCT rowid, len FROM kept) AS matched) AS avg_len
            )
{_BM25}
            FROM kept p JOIN df d USING (lexeme), sizes s
            GROUP BY p.rowid
            ORDER BY 2 DESC, p.rowid
            LIMIT k"""


def own_statistics_functions(cur: Cursor) -> None:
    """The search's choices from mnemo's own counts, not the planner's statistics, which a
    Citus coordinator does not have (its tables hold no rows: the shards on the workers do).

    - The lexical search drops the words common in the user's own active facts: found in more
      than `common_share` of them, when the user has at least `small_store` (fact_counts).
      The document frequencies are those its BM25 counts already, among the matches. Before,
      the words common in everyone's facts were dropped, read from pg_stats by
      mnemo_common_words, which goes. A common word's matches are now read before it is
      dropped: the cost of one user's posting list, not of everyone's.
    - `mnemo_vector_total` answers how many vectors there are in all (vector_counts, which
      every commit keeps): the HNSW-or-exact choice compares a user's count with it, where it
      read pg_class.reltuples of fact_vectors. A count only, of no one in particular.
    """
    cur.execute(
        f"""
        CREATE FUNCTION mnemo_lexical(
            words text[], agents text[], k integer, common_share double precision, small_store bigint
        ) RETURNS TABLE (fact_rowid bigint, score double precision) LANGUAGE sql STABLE AS $$
{_own_counts_lexical(_SETTING)}
        $$;
        DROP FUNCTION mnemo_lexical(text[], text[], integer, text[]);
        DROP FUNCTION mnemo_common_words(double precision, bigint);
        CREATE FUNCTION mnemo_vector_total() RETURNS bigint LANGUAGE sql STABLE AS $$
            SELECT COALESCE(sum(n), 0)::bigint FROM vector_counts
        $$;
        """
    )
    definer(cur, "mnemo_lexical(text[], text[], integer, double precision, bigint)")
    definer(cur, "mnemo_vector_total()")


LEXICAL = "mnemo_lexical(text, text[], text[], integer, double precision, bigint)"
# the user of the lexical search since migration 19: its argument, which must be the transaction's
_WHO = f"who AND who = {_SETTING}"


def routed_lexical_function(cur: Cursor) -> None:
    """The lexical search names its user as an argument, as every other statement on a
    per-user table names it.

    Citus sends a statement to one shard only when it compares the distribution column with
    a value it sees when it plans: a literal or a parameter. `current_setting('mnemo.user_id')`
    is a function call, so on Citus migration 18's search ran on every shard of `facts` (each
    found the user's rows, or none, under the policy). The user is now the first argument, and
    it must be the transaction's user: the function is a definer's, which the row-level
    policies do not hold, so a call that names anyone else finds nothing.
    """
    cur.execute(
        routed_lexical_sql("mnemo_lexical")
        + "; DROP FUNCTION mnemo_lexical(text[], text[], integer, double precision, bigint)"
    )
    definer(cur, LEXICAL)


def routed_lexical_sql(name: str) -> str:
    """Migration 19's search, created as the function `name` (bench/postgres_lexical.py times it
    beside the search as shipped)."""
    return f"""
        CREATE FUNCTION {name}(
            who text, words text[], agents text[], k integer, common_share double precision,
            small_store bigint
        ) RETURNS TABLE (fact_rowid bigint, score double precision) LANGUAGE sql STABLE AS $$
{_own_counts_lexical(_WHO)}
        $$"""


def rare_words_lexical_function(cur: Cursor) -> None:
    """The lexical search reads each word's matches once, and a common word's only until it
    is known to be common.

    Since migration 18 every match of every query word was read, its lexemes unnested, then
    the common words' postings dropped and the rest scored in `numeric`: for one person with
    100,000 facts a question whose words are each in a few percent of them took 30-40 ms,
    most of it unnesting and decimal arithmetic (bench/postgres_lexical.py); for a person with
    1,000 facts among a million, the index's lists of a common word's facts, everyone's,
    were most of it. Now, on a store of at least `small_store` facts, each word is searched
    on its own through the index, its matches among the person's active facts read up to one
    past the share that makes it common (`common_share` of them), and a word found more
    often is dropped; on a smaller store the person's active facts are read once, by the
    index of their own rows, and each word matched among them. The rest are scored by BM25
    (k1 = 1.2, b = 0.75) in double precision. A fact counts a word once
    (facts are a sentence or two; unnesting each fact's lexemes to count repeats was the
    largest cost); its length, the matches' average length, N and each word's document
    frequency among the person's facts are as before. Each word is a phrase to PostgreSQL,
    whatever characters it holds: "-harp" finds harp, never "not harp" (the store sends runs
    of word characters only; the application role could send more)."""
    cur.execute(
        f"""
        CREATE OR REPLACE FUNCTION mnemo_lexical(
            who text, words text[], agents text[], k integer, common_share double precision,
            small_store bigint
        ) RETURNS TABLE (fact_rowid bigint, score double precision) LANGUAGE sql STABLE AS $$
            WITH facts_n AS (
                SELECT COALESCE((SELECT active FROM fact_counts WHERE user_id = {_WHO}), 0) AS n
            ), most AS (
                -- the most facts a word may be found in and still be searched (NULL: any number)
                SELECT CASE WHEN n >= small_store THEN greatest(floor(common_share * n), 0)::bigint END AS n
                FROM facts_n
            ), searched AS (
                -- a word as a phrase: no operator in it ("-", "or", quotes) is read as one
                SELECT DISTINCT q FROM unnest(words) AS w, phraseto_tsquery('english', w) AS q
                WHERE numnode(q) > 0
            ), own AS MATERIALIZED (
                -- a small store: the person's active facts, read once, each word matched in memory
                SELECT f.rowid, f.tsv FROM facts f
                WHERE f.user_id = {_WHO} AND f.status = 'active' AND (SELECT n FROM most) IS NULL
                  AND (agents IS NULL OR COALESCE(f.agent_id, '') = ANY (agents))
            ), matched AS (
                -- a large one: each word through the full-text index, read up to one past its share
                SELECT searched.q, m.rowid, m.tsv
                FROM searched, most, LATERAL (
                    SELECT f.rowid, f.tsv FROM facts f
                    WHERE f.user_id = {_WHO}
                      AND f.tsv @@ searched.q AND f.status = 'active'
                      AND (agents IS NULL OR COALESCE(f.agent_id, '') = ANY (agents))
                    LIMIT most.n + 1
                ) AS m
                WHERE most.n IS NOT NULL
                UNION ALL
                SELECT searched.q, own.rowid, own.tsv FROM searched, own WHERE own.tsv @@ searched.q
            ), found AS (
                SELECT q, rowid, length(tsv)::float8 AS len, (count(*) OVER (PARTITION BY q))::float8 AS df
                FROM matched
            ), kept AS (
                SELECT found.* FROM found, most WHERE most.n IS NULL OR found.df <= most.n
            ), sizes AS (
                SELECT (SELECT n FROM facts_n)::float8 AS n,
                       (SELECT avg(len) FROM (SELECT DISTINCT rowid, len FROM kept) AS matched) AS avg_len
            )
            SELECT p.rowid,
                   -- greatest before ln, never after: no logarithm of a negative number, whatever the counts
                   sum(ln(greatest((s.n - p.df + 0.5) / (p.df + 0.5), 1.000001))
                       * 2.2 / (1 + 1.2 * (0.25 + 0.75 * p.len / nullif(s.avg_len, 0))))
            FROM kept p, sizes s
            GROUP BY p.rowid
            ORDER BY 2 DESC, p.rowid
            LIMIT k
        $$
        """
    )
    definer(cur, LEXICAL)


def fair_claim_candidates(cur: Cursor) -> None:
    """The claim's candidates in turn: the users whose earliest open job is due, the one served
    longest ago (or never) first, then the oldest due (jobs.stamp_claim keeps that job's
    `user_claimed_at`). One column of the candidate row itself, so Citus plans it as before."""
    cur.execute(
        f"""
        CREATE OR REPLACE FUNCTION mnemo_claim_candidates(now timestamptz, n integer) RETURNS SETOF text
        LANGUAGE sql STABLE AS $$
            SELECT d.user_id FROM jobs d
            WHERE ({CLAIM_DUE}) AND NOT EXISTS ({CLAIM_HELD})
            ORDER BY d.user_claimed_at NULLS FIRST, d.next_attempt_at, d.id
            LIMIT n
        $$
        """
    )
    definer(cur, "mnemo_claim_candidates(timestamptz, integer)")
