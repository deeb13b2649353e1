"""mnemo's schema on a Citus cluster (migration 18): what is distributed, what is a reference
table, and that the migration may run again. The store's behaviour on the cluster is tested by
the backend-parametrised suites with `--backend=citus` (tests/conftest.py)."""

from __future__ import annotations

import psycopg
import pytest

from mnemo.store.migrations.postgres import APP_ROLE
from mnemo.store.migrations.postgres_citus import REFERENCE_TABLES, distribute

pytestmark = [pytest.mark.backend("citus"), pytest.mark.citus, pytest.mark.slow]


def _layout(conn: psycopg.Connection) -> dict[str, tuple[str, str | None, int]]:
    """table -> (Citus's method: 'h' hash-distributed, 'n' reference; its column; colocation)."""
    rows = conn.execute(
        "SELECT logicalrelid::regclass::text, partmethod, column_to_column_name(logicalrelid, partkey),"
        " colocationid FROM pg_dist_partition"
    ).fetchall()
    return {table: (method, column, group) for table, method, column, group in rows}


def test_every_per_user_table_is_distributed_by_user_and_the_shared_ones_are_reference_tables(
    citus_store_url,
):
    with psycopg.connect(citus_store_url) as conn:
        layout = _layout(conn)
        # the tables the row-level policies guard, but `users` (a policy on its id)
        per_user = {
            t
            for (t,) in conn.execute("SELECT DISTINCT tablename FROM pg_policies WHERE tablename <> 'users'")
        }
        can_login = conn.execute(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (APP_ROLE,)
        ).fetchone()
    assert {t for t, (method, _, _) in layout.items() if method == "n"} == set(REFERENCE_TABLES)
    distributed = {t: rest for t, rest in layout.items() if rest[0] == "h"}
    assert per_user - set(REFERENCE_TABLES) == set(distributed)
    assert {(column, group) for _, column, group in distributed.values()} == {
        ("user_id", layout["facts"][2])
    }, "one column and one colocation group: a user's rows of every table in one shard group"
    assert can_login == (True,)  # the coordinator connects to the workers as this role


def test_the_migration_runs_again_without_changing_anything(citus_store_url):
    with psycopg.connect(citus_store_url) as conn:
        before = _layout(conn)
        with conn.transaction(), conn.cursor() as cur:
            distribute(cur)
        assert _layout(conn) == before
