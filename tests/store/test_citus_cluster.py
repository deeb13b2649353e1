"""The test cluster is a real Citus cluster: two workers, tables distributed by user,
pgvector's HNSW and a GIN index on the shards, row-level security on the workers.

What mnemo's store will need of Citus, shown on plain tables (tests/citus_server.py
gives each test a database of the cluster); and the cluster's start survives a
taken port and a cluster that a killed test run left behind.
"""

from __future__ import annotations

import math
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from tests import citus_nodes
from tests.citus_build import REPOSITORY

pytestmark = [pytest.mark.citus, pytest.mark.slow]

USERS = [f"user{i}" for i in range(12)]


def _embedding(i: int) -> list[float]:
    return [math.cos(i), math.sin(i), math.cos(3 * i)]


def _literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def _cosine_distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1 - dot / (math.dist(a, [0, 0, 0]) * math.dist(b, [0, 0, 0]))


@pytest.fixture
def memories(citus_url) -> psycopg.Connection:
    """A table distributed by user_id: 12 users × 20 rows, with an HNSW and a GIN index."""
    conn = psycopg.connect(citus_url, autocommit=True)
    conn.execute(
        """
        CREATE TABLE memories (
            user_id text NOT NULL,
            id bigint NOT NULL,
            body text NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED,
            embedding vector(3) NOT NULL,
            PRIMARY KEY (user_id, id)
        )
        """
    )
    conn.execute("SELECT create_distributed_table('memories', 'user_id')")
    conn.execute("CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops)")
    conn.execute("CREATE INDEX memories_tsv ON memories USING gin (tsv)")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memories (user_id, id, body, embedding) VALUES (%s, %s, %s, %s)",
            [
                (
                    user,
                    i,
                    f"{user} planted {'apple' if i % 4 == 0 else 'pear'} tree number {i}",
                    _literal(_embedding(i)),
                )
                for u, user in enumerate(USERS)
                for i in range(u * 100, u * 100 + 20)
            ],
        )
    conn.execute("ANALYZE memories")  # the shards' statistics, which their planners choose by
    yield conn
    conn.close()


def test_the_cluster_has_two_active_workers(citus, citus_url):
    with psycopg.connect(citus_url) as conn:
        active = conn.execute("SELECT node_name, node_port FROM citus_get_active_worker_nodes()").fetchall()
        extensions = conn.execute("SELECT extname FROM pg_extension ORDER BY 1").fetchall()
    assert sorted(active) == sorted(citus.workers)
    assert len(active) == 2
    assert {"citus", "vector"} <= {name for (name,) in extensions}


def test_rows_of_a_distributed_table_land_on_both_workers(citus, memories):
    per_node = dict(
        memories.execute(
            "SELECT nodeport, sum(result::bigint)"
            " FROM run_command_on_placements('memories', 'SELECT count(*) FROM %s') GROUP BY nodeport"
        ).fetchall()
    )
    assert set(per_node) == {port for _, port in citus.workers}
    assert all(count > 0 for count in per_node.values())
    assert sum(per_node.values()) == len(USERS) * 20
    # every user's rows are in one shard, so on one worker
    nodes_per_user = memories.execute(
        "SELECT count(DISTINCT nodeport) FROM memories m"
        " JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('memories', m.user_id)"
        " GROUP BY m.user_id"
    ).fetchall()
    assert nodes_per_user == [(1,)] * len(USERS)


def _plan(conn: psycopg.Connection, sql: str, **settings: str) -> str:
    """The plan of `sql` on its shard with these settings, sent on to the workers as mnemo's
    store would (SET LOCAL, propagated: set_config() would stay on the coordinator)."""
    with conn.transaction():
        conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        for name, value in settings.items():
            conn.execute(f"SET LOCAL {name} = {value}")
        return "\n".join(row for (row,) in conn.execute(f"EXPLAIN {sql}").fetchall())


def test_nearest_neighbours_of_one_user_come_from_one_shard_through_hnsw(memories):
    query = _embedding(7)
    # literals: Citus shows no remote plan for a statement with parameters
    sql = (
        f"SELECT id FROM memories WHERE user_id = 'user5' ORDER BY embedding <=> '{_literal(query)}' LIMIT 3"
    )
    expected = sorted(range(500, 520), key=lambda i: _cosine_distance(_embedding(i), query))[:3]
    assert [i for (i,) in memories.execute(sql).fetchall()] == expected
    # as mnemo's store does for an HNSW search: no sort, so the planner walks the graph
    plan = _plan(memories, sql, enable_sort="off")
    assert "Task Count: 1" in plan  # routed to the one shard of that user
    assert "Index Scan using memories_embedding_" in plan
    with memories.transaction():
        memories.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        memories.execute("SET LOCAL enable_sort = off")
        assert [i for (i,) in memories.execute(sql).fetchall()] == expected


def test_a_word_search_of_one_user_uses_the_gin_index_on_its_shard(memories):
    sql = (
        "SELECT id FROM memories"
        " WHERE user_id = 'user3' AND tsv @@ plainto_tsquery('english', 'apples') ORDER BY id"
    )
    assert [i for (i,) in memories.execute(sql).fetchall()] == [300, 304, 308, 312, 316]
    # a shard of 20 rows is read whole unless scans are forbidden; of the two bitmaps, GIN's wins
    plan = _plan(memories, sql, enable_seqscan="off", enable_indexscan="off")
    assert "Task Count: 1" in plan
    assert "Bitmap Index Scan on memories_tsv_" in plan


def test_row_level_security_on_a_distributed_table_hides_other_users_rows(memories):
    memories.execute("ALTER TABLE memories ENABLE ROW LEVEL SECURITY")
    memories.execute(
        "CREATE POLICY owner_only ON memories USING (user_id = current_setting('mnemo.user_id', true))"
    )
    # the coordinator opens the workers' connections as the current role: it must be able to log in
    memories.execute(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'citus_test_reader')"
        " THEN CREATE ROLE citus_test_reader LOGIN; END IF; END $$"
    )
    memories.execute("GRANT SELECT ON memories TO citus_test_reader")

    def as_user(user: str, sql: str, propagated: bool = True) -> list[tuple]:
        with memories.transaction():
            memories.execute("SET LOCAL ROLE citus_test_reader")
            if propagated:  # the workers' policies see the setting only if SET LOCAL is sent on
                memories.execute("SET LOCAL citus.propagate_set_commands = 'local'")
                memories.execute(f"SET LOCAL mnemo.user_id = '{user}'")
            else:
                memories.execute("SELECT set_config('mnemo.user_id', %s, true)", (user,))
            return memories.execute(sql).fetchall()

    assert as_user("user1", "SELECT count(*) FROM memories WHERE user_id = 'user1'") == [(20,)]
    assert as_user("user1", "SELECT count(*) FROM memories WHERE user_id = 'user2'") == [(0,)]
    # a query on every shard: each worker's policy keeps the user's rows alone
    assert as_user("user1", "SELECT user_id, count(*) FROM memories GROUP BY user_id") == [("user1", 20)]
    # set_config() is not propagated: the workers see no user, and hide even the user's own rows
    assert as_user("user1", "SELECT count(*) FROM memories WHERE user_id = 'user1'", propagated=False) == [
        (0,)
    ]


def test_a_port_taken_between_its_choice_and_the_start_is_chosen_again(monkeypatch):
    with socket.socket() as held:
        held.bind((citus_nodes.HOST, 0))
        held.listen()
        taken = held.getsockname()[1]
        choices, free_port = iter([taken]), citus_nodes._free_port
        monkeypatch.setattr(citus_nodes, "_free_port", lambda: next(choices, None) or free_port())
        nodes = citus_nodes.Nodes(workers=0)
        try:
            assert nodes.coordinator.port != taken
            with psycopg.connect(host=citus_nodes.HOST, port=nodes.coordinator.port, user="postgres") as conn:
                assert conn.execute("SHOW shared_preload_libraries").fetchone() == ("citus",)
        finally:
            nodes.stop()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_cluster_left_by_a_killed_test_run_is_stopped_and_removed_by_the_next_start():
    script = (
        "import time; from tests.citus_nodes import Nodes; n = Nodes(workers=0);"
        " print(n.root, flush=True); time.sleep(120)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPOSITORY, stdout=subprocess.PIPE, text=True
    )
    try:
        root = Path(child.stdout.readline().strip())
        postmaster = int((root / "coordinator" / "postmaster.pid").read_text().split()[0])
    finally:
        child.kill()
        child.wait()
    assert _running(postmaster)  # the test run is gone, its server is not
    nodes = citus_nodes.Nodes(workers=0)
    try:
        assert not root.exists()
        deadline = time.monotonic() + 10
        while _running(postmaster) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(postmaster)
    finally:
        nodes.stop()
    assert not nodes.root.exists()
