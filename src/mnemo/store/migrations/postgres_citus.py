"""mnemo's schema on a Citus cluster: what is distributed by user, what is a reference table.

Migration 18 calls `distribute`, and so does every start of the store after the
migrations: a PostgreSQL database that became a Citus coordinator after migration
18 (docs/scaling.md, "Moving onto Citus") is distributed, rows and all, when mnemo
next starts. On plain PostgreSQL (no `citus` extension in the database) it does
nothing. On a Citus coordinator it makes `users`, `agents` and `settings`
reference tables (a copy on every node: every shard joins them locally) and
distributes every per-user table by `user_id`, all colocated with `facts`, so
that one user's rows of every table live in one shard group, on one worker, and
every statement pinned to a user is routed there whole. A table already
distributed is left as it is, so it may run again (a migration that was cut
short); on an empty database it distributes empty tables.

The application role must be able to log in on a cluster: the coordinator opens
its connections to the workers as the current role, which is APP_ROLE once a
pooled connection has SET ROLE to it (docs/scaling.md: the workers must accept
that role from the coordinator). It is given LOGIN here, and no password: how
the workers authenticate it (trust from the coordinator's address, a
certificate, or a password in `pg_dist_authinfo`) is the deployment's choice.
"""

from __future__ import annotations

from ..migrate import Cursor
from .postgres_security import APP_ROLE

# Citus's setting that sends a transaction's SET LOCAL on to the workers its statements run
# on: the policies there read the transaction's user (mnemo.user_id) so
PROPAGATE_SETTINGS = "citus.propagate_set_commands"
# the migration that distributes the tables (the schema they are distributed in is complete
# from it on); every later start distributes them again where they are not yet
CITUS_MIGRATION = 18
REFERENCE_TABLES = ("users", "agents", "settings")
# every table with rows of one user, in an order where each foreign key's target comes first;
# `facts` is the group the others are colocated with
DISTRIBUTED_TABLES = (
    "facts",
    "fact_vectors",
    "fact_events",
    "conversations",
    "messages",
    "jobs",
    "api_keys",
    "backfill_progress",
    "vector_counts",
    "fact_counts",
    "erased_texts",
    "receipts",
    "recalls",
    "token_usage",
    "token_budgets",
)
# a trigger on a distributed table is created on every shard; Citus asks to be told that
# this is meant: the event log's append-only trigger only raises, reading nothing
TRIGGERED = {"fact_events"}
# the nodes holding shards that acknowledge a commit before its WAL is written out: Citus ends a
# shard's move by waiting for the new node to replay the source's WAL up to what is written out,
# so a write acknowledged just before the switch can be left behind with the old copy
# (docs/scaling.md, "Adding a worker")
ASYNC_COMMIT_NODES = (
    "SELECT n.nodename || ':' || n.nodeport"
    " FROM run_command_on_all_nodes('SHOW synchronous_commit') r JOIN pg_dist_node n USING (nodeid)"
    " WHERE n.shouldhaveshards AND r.success AND r.result = 'off' ORDER BY 1"
)


# whether this database is a Citus coordinator's (the `citus` extension is in it)
IS_COORDINATOR = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"


def async_commit_nodes(cur: Cursor) -> list[str]:
    """The nodes (host:port) where a shard move can lose acknowledged writes: those holding shards
    with `synchronous_commit = off`. Empty off Citus."""
    if not cur.execute(IS_COORDINATOR).fetchone()[0]:
        return []
    return [node for (node,) in cur.execute(ASYNC_COMMIT_NODES).fetchall()]


def distribute(cur: Cursor) -> None:
    """Distribute mnemo's tables when the database is a Citus coordinator (see above).

    A table that holds rows is copied to its shards, and Citus keeps the coordinator's own
    copy on disk (no longer read) until it is truncated: it is truncated at once, or a text
    purged later would stay in the coordinator's files for good. So is any such copy an
    earlier distribution left (migration 18 did, before this was known)."""
    if not cur.execute(IS_COORDINATOR).fetchone()[0]:
        return
    tables = (*REFERENCE_TABLES, *DISTRIBUTED_TABLES)
    rows = cur.execute("SELECT logicalrelid::regclass::text FROM pg_dist_partition").fetchall()
    done = {name for (name,) in rows}
    # the coordinator's own copy of a table: empty (no file pages) once distributed and truncated
    rows = cur.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
        " AND relname = ANY (%s) AND pg_relation_size(oid) > 0",
        (list(tables),),
    ).fetchall()
    left = {name for (name,) in rows}
    if done >= set(tables) and not left:
        return
    cur.execute(f"ALTER ROLE {APP_ROLE} LOGIN")
    for table in tables:
        if table in done:
            continue
        if table in TRIGGERED:
            cur.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        if table in REFERENCE_TABLES:
            cur.execute("SELECT create_reference_table(%s)", (table,))
        else:
            colocate = "none" if table == DISTRIBUTED_TABLES[0] else DISTRIBUTED_TABLES[0]
            cur.execute(
                "SELECT create_distributed_table(%s, 'user_id', colocate_with => %s)", (table, colocate)
            )
        if table in TRIGGERED:
            cur.execute("SET LOCAL citus.enable_unsafe_triggers = off")
    for table in tables:
        if table in done and table not in left:
            continue
        if table in TRIGGERED:  # its trigger refuses a TRUNCATE: off for this one, in this transaction
            cur.execute("SET LOCAL citus.enable_unsafe_triggers = on")
            cur.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        cur.execute("SELECT truncate_local_data_after_distributing_table(%s)", (table,))
        if table in TRIGGERED:
            cur.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
            cur.execute("SET LOCAL citus.enable_unsafe_triggers = off")
