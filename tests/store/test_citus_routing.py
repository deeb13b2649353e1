"""On a Citus cluster, every statement mnemo sends runs on one shard group, but for the listed
cross-user functions: proved by running the scoping workload where Citus refuses any other.

Citus plans a statement on distributed tables as one task per shard it must reach. A statement
pinned to one user (`user_id = <value>` on each distributed table it reads, colocated) is one
task on that user's shard group; one that is not becomes a task per shard.
`citus.multi_task_query_log_level` makes the coordinator's planner report a plan of more than one
task, and at `error` refuse it. So:

- the store migrates a new cluster database (migration 18 distributes every per-user table by
  `user_id`, colocated, and makes `users`, `agents` and `settings` reference tables);
- the database is then set to refuse multi-task plans in every session opened after
  (`ALTER DATABASE … SET`), and each function of sql_scope.CROSS_USER_FUNCTIONS the migrations
  create is let through (`ALTER FUNCTION … SET … = off`): that commented list is the whole of
  what may read across users (who is called this name, whose key this is, the job claim's
  candidates, the operator's counts and lists);
- the scoping test's whole workload (tests/store/scoping_workload.py: every kind of request,
  both vector search paths, the queue, erasure, import, export, reindex) runs on it and must
  finish: any other statement that needed more than one shard fails it with Citus's error,
  raised in the store function that sent it.

This is the runtime half of tests/store/test_postgres_scoping.py, which judges the same
statements' text. Two controls show the setting in force: a statement that names no user is
refused, the same statement pinned to one is not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from mnemo.store.migrations.postgres import APP_ROLE
from mnemo.store.postgres import PostgresStore
from mnemo.store.postgres_search import nearest_sql
from tests.fakes.openai_server import ScriptedOpenAI
from tests.store.scoping_workload import workload
from tests.store.sql_scope import CROSS_USER_FUNCTIONS, Recorder, Sent, as_sent

pytestmark = [pytest.mark.backend("citus"), pytest.mark.citus, pytest.mark.slow]

REFUSED = "multi-task query about to be executed"


def _refuse_multi_shard_plans(url: str) -> list[str]:
    """Set the database to refuse plans of more than one task, but in the cross-user functions
    (those the migrations created); returns their names."""
    with psycopg.connect(url, autocommit=True) as conn:
        database = conn.execute("SELECT current_database()").fetchone()[0]
        conn.execute(
            psycopg.sql.SQL("ALTER DATABASE {} SET citus.multi_task_query_log_level = 'error'").format(
                psycopg.sql.Identifier(database)
            )
        )
        exempt = conn.execute(
            "SELECT p.oid::regprocedure::text, p.proname FROM pg_proc p"
            " WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = ANY (%s)"
            " ORDER BY p.proname",
            (list(CROSS_USER_FUNCTIONS),),
        ).fetchall()
        for signature, _ in exempt:
            conn.execute(f"ALTER FUNCTION {signature} SET citus.multi_task_query_log_level = 'off'")
    return [name for _, name in exempt]


@pytest.fixture
def routed(citus_url, embedder, tmp_path) -> Iterator[tuple[str, dict[str, Sent], list[str]]]:
    """A migrated cluster database that refuses multi-shard plans, after the workload ran on it:
    (its URL, the statements mnemo sent, the cross-user functions let through)."""
    # 4 shards a table (as the test template's), not Citus's 32: a statement on more than one
    # is as refused, and the workload's many new tables and indexes take less time
    PostgresStore(make_conninfo(citus_url, options="-c citus.shard_count=4"))._migrate()
    exempt = _refuse_multi_shard_plans(citus_url)
    recorder = Recorder()
    with pytest.MonkeyPatch.context() as mp, ScriptedOpenAI() as llm:
        recorder.install(mp)
        asyncio.run(workload(citus_url, embedder, llm, tmp_path, recorder.sent))
    yield citus_url, recorder.sent, exempt


def test_the_whole_workload_runs_where_a_statement_on_several_shards_is_refused(routed, embedder):
    url, sent, exempt = routed
    # it ran: as many distinct statements as on one server, both vector search paths among them
    assert len(sent) >= 100, f"only {len(sent)} distinct statements: the workload shrank"
    dims = embedder.dimensions
    for by_index in (False, True):
        for all_agents in (False, True):
            assert as_sent(nearest_sql(dims, by_index=by_index, all_agents=all_agents), {}) in sent
    # the exemptions: the functions of the list that exist now (migration 18 dropped two)
    assert set(exempt) == set(CROSS_USER_FUNCTIONS) - {"mnemo_claim_job", "mnemo_common_words"}

    # the controls, as the store's own sessions run: the setting refuses what names no user …
    with psycopg.connect(url) as conn:
        conn.execute(f"SET ROLE {APP_ROLE}")
        user_id = conn.execute("SELECT mnemo_user_named('alice')").fetchone()[0]
        with pytest.raises(psycopg.Error, match=REFUSED):
            conn.execute("SELECT count(*) FROM facts")
        conn.rollback()
        # … and lets the same statement through, pinned to one user
        with conn.transaction():
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            conn.execute(psycopg.sql.SQL("SET LOCAL mnemo.user_id = {}").format(psycopg.sql.Literal(user_id)))
            (n,) = conn.execute("SELECT count(*) FROM facts WHERE user_id = %s", (user_id,)).fetchone()
        assert n > 0
        # and a cross-user function of the list still answers
        assert conn.execute("SELECT count(*) FROM mnemo_user_ids()").fetchone()[0] >= 2
