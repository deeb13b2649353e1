"""One Citus cluster for the whole test session, and a fresh cluster database for each test.

The cluster is a coordinator and two workers on loopback (tests/citus_nodes.py),
with Citus built from the vendored source on first use (tests/citus_build.py),
unless MNEMO_TEST_CITUS_URL names a cluster to use instead: the coordinator's
admin URL, in a database where Citus knows its workers (`pg_dist_node`), whose
credentials also reach the workers at the addresses recorded there.

A database of a Citus cluster is one database of the same name on every node,
each with the `citus` extension, and the coordinator's copy must know the
workers. Citus propagates neither CREATE DATABASE (unless
`citus.enable_create_database_propagation`, off by default, and then not with a
TEMPLATE) nor the workers' registration to a new database, and setting one up
from nothing costs ~1.6 s on the 2-core reference machine (the extension's
install script on three nodes, then `citus_add_node`). So a template is set up
once on every node (extensions `citus` and `vector`, workers registered, its
connections closed so it can be copied: Citus's maintenance daemon would hold
one), and a test's database is a copy of it made on the three nodes at once
(~0.05 s with the data in memory, 0.3-0.8 s on disk). Afterwards, a database
whose catalog matches the template's on every node is handed to the next test
(~0.05 s to check); one where the test made tables, functions or policies, or
changed the nodes, is dropped on every node (~0.03 s).

A test of mnemo's store on Citus (`--backend=citus`) asks for a MIGRATED database
instead: a copy of a second template, set up on first use, where the store's
own migrations ran (migration 18 distributed its tables, 4 shards each); its
rows are deleted afterwards, and it is handed on as the bare ones are.
"""

from __future__ import annotations

import itertools
import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mnemo.store.postgres import PostgresStore
from tests.citus_nodes import HOST, Nodes

URL_VARIABLE = "MNEMO_TEST_CITUS_URL"
BARE, MIGRATED = "bare", "migrated"  # the kinds of database a test may ask for

# what a test may have made or changed in a database, on any node (workers hold the
# shards): relations, types, functions, policies and schemas by name, the nodes Citus
# knows, and the database's settings
_FINGERPRINT = r"""
SELECT md5(concat_ws('|',
  (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' ORDER BY 1)
   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT LIKE 'pg\_%'),
  (SELECT string_agg(n.nspname || '.' || t.typname, ',' ORDER BY 1)
   FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname NOT LIKE 'pg\_%'),
  (SELECT string_agg(n.nspname || '.' || p.proname, ',' ORDER BY 1)
   FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname NOT LIKE 'pg\_%'),
  (SELECT string_agg(polname, ',' ORDER BY 1) FROM pg_policy),
  (SELECT string_agg(nspname, ',' ORDER BY 1) FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%'),
  (SELECT string_agg(concat_ws(':', nodename, nodeport, noderole, isactive, shouldhaveshards), ',' ORDER BY 1)
   FROM pg_dist_node),
  (SELECT string_agg(array_to_string(setconfig, ','), ';' ORDER BY 1) FROM pg_db_role_setting
   WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))))
"""


class SessionCitus:
    def __init__(self) -> None:
        self._nodes: Nodes | None = None
        url = os.environ.get(URL_VARIABLE)
        if url:
            self.admin_url = url
            with psycopg.connect(url, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT nodename, nodeport, groupid = 0 FROM pg_dist_node"
                    " WHERE noderole = 'primary' AND isactive ORDER BY groupid"
                ).fetchall()
            coordinator = dict(conninfo_to_dict(url))
            self.coordinator = next(
                ((host, port) for host, port, is_coordinator in rows if is_coordinator),
                (coordinator.get("host") or HOST, int(coordinator.get("port") or 5432)),
            )
            self.workers = [(host, port) for host, port, is_coordinator in rows if not is_coordinator]
        else:
            self._nodes = Nodes(workers=2)
            self.admin_url = make_conninfo(host=HOST, port=self._nodes.coordinator.port, user="postgres")
            self.coordinator = (HOST, self._nodes.coordinator.port)
            self.workers = [(HOST, node.port) for node in self._nodes.workers]
        if not self.workers:
            raise RuntimeError(f"the Citus cluster at {self.admin_url} has no active worker")
        self._prefix = f"mnemo_citus_{uuid.uuid4().hex[:8]}"
        self._names = itertools.count(1)
        # per kind of database (BARE, MIGRATED): the databases as its template left them,
        # ready for the next test, and the template's fingerprint on every node
        self._clean: dict[str, list[str]] = {BARE: [], MIGRATED: []}
        self._fingerprints: dict[str, list[tuple | None]] = {}
        self._made: set[str] = set()
        self.template = f"{self._prefix}_template"
        try:
            self._set_up_template(self.template)
        except BaseException:
            self.stop()
            raise

    def url(self, database: str) -> str:
        """The coordinator's admin connection to `database`."""
        return make_conninfo(self.admin_url, dbname=database)

    def node_urls(self, database: str) -> list[str]:
        """The admin connections to `database` on every node, the coordinator first."""
        return [
            make_conninfo(self.admin_url, host=host, port=port, dbname=database)
            for host, port in [self.coordinator, *self.workers]
        ]

    @staticmethod
    def _on_nodes(urls: list[str], sql: str) -> list[tuple | None]:
        """Run `sql` on these nodes at once (each waits for its disk: together they take the
        time of the slowest); returns each one's first row."""

        def run(url: str) -> tuple | None:
            with psycopg.connect(url, autocommit=True) as conn:
                cur = conn.execute(sql)
                return cur.fetchone() if cur.description else None

        with ThreadPoolExecutor(len(urls)) as pool:
            return list(pool.map(run, urls))

    def _on_every_node(self, sql: str, database: str = "postgres") -> list[tuple | None]:
        return self._on_nodes(self.node_urls(database), sql)

    def _create_on_nodes(self, name: str) -> tuple[str, list[str]]:
        """A database of this name on every node, with Citus on the workers only; returns the
        coordinator's connection string and the workers'."""
        self._on_every_node(f'CREATE DATABASE "{name}"')
        coordinator, *workers = self.node_urls(name)
        self._on_nodes(workers, "CREATE EXTENSION citus")
        return coordinator, workers

    def create_plain_database(self) -> str:
        """A database that is plain PostgreSQL on the coordinator's server (no `citus` in it, no
        workers known), and is ready on the workers: what a deployment moving onto the cluster
        starts from. Returns the coordinator's connection string; drop_database drops it."""
        name = f"{self._prefix}_{next(self._names)}"
        self._made.add(name)
        return self._create_on_nodes(name)[0]

    def _set_up_template(self, template: str, migrated: bool = False) -> None:
        coordinator, _ = self._create_on_nodes(template)
        with psycopg.connect(coordinator, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
            conn.execute("CREATE EXTENSION vector")  # Citus creates it on the workers too
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", self.coordinator)
            for host, port in self.workers:
                conn.execute("SELECT citus_add_node(%s, %s)", (host, port))
        if migrated:
            # 4 shards a table, not Citus's 32: each test's rows are deleted from every shard
            # afterwards, and 2 workers on loopback gain nothing from more
            PostgresStore(make_conninfo(coordinator, options="-c citus.shard_count=4"))._migrate()
        self._fingerprints[MIGRATED if migrated else BARE] = self._on_every_node(_FINGERPRINT, template)
        # no connection may stay on a template while it is copied: close them for good
        self._on_every_node(f'ALTER DATABASE "{template}" WITH ALLOW_CONNECTIONS false')
        self._on_every_node(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{template}'"
        )
        # a copy waits for a checkpoint, the first one for all that making the template wrote
        self._on_every_node("CHECKPOINT")

    def _template(self, kind: str) -> str:
        if kind == BARE:
            return self.template
        template = f"{self._prefix}_migrated"
        if kind not in self._fingerprints:
            self._made.add(template)
            self._set_up_template(template, migrated=True)
        return template

    def create_database(self, kind: str = BARE) -> str:
        """A new cluster database as the template of `kind` is; returns the coordinator's
        connection string."""
        name = f"{self._prefix}_{next(self._names)}"
        self._made.add(name)
        template = self._template(kind)
        self._on_every_node(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = conninfo_to_dict(url)["dbname"]
        self._on_every_node(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._made.discard(name)

    def acquire(self, kind: str = BARE) -> str:
        """A cluster database for one test: Citus and pgvector installed, the workers known;
        MIGRATED: mnemo's schema too, distributed (migration 18), and no rows."""
        clean = self._clean[kind]
        return self.url(clean.pop()) if clean else self.create_database(kind)

    def release(self, url: str, kind: str = BARE) -> None:
        """Hand the database to the next test if the test left its catalog as it was (mnemo's rows
        deleted first), else drop it."""
        name = conninfo_to_dict(url)["dbname"]
        self._on_every_node(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'",
            name,
        )
        if kind == MIGRATED:
            _empty(url)
        if self._on_every_node(_FINGERPRINT, name) == self._fingerprints[kind]:
            self._clean[kind].append(name)
        else:
            self.drop_database(url)

    def stop(self) -> None:
        if self._nodes is not None:  # the cluster and its databases go together
            self._nodes.stop()
            return
        for name in [*self._made, self.template]:
            self._on_every_node(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _empty(url: str) -> None:
    """Delete every row of mnemo's tables and the HNSW indexes made on demand (a test's)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT quote_ident(tablename) FROM pg_tables"
            " WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'"
        ).fetchall()
        hnsw = conn.execute(
            "SELECT string_agg(quote_ident(indexname), ', ') FROM pg_indexes"
            " WHERE schemaname = current_schema() AND indexname LIKE 'fact_vectors_hnsw_%'"
        ).fetchone()[0]
        with conn.transaction():
            # the event log's append-only trigger does not fire for a replica, on the workers too
            conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            conn.execute("SET LOCAL session_replication_role = replica")
            # the reference tables are deleted from after the distributed ones, which refer to them
            conn.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
            for (table,) in tables:
                conn.execute(f"DELETE FROM {table}")
        if hnsw:
            conn.execute(f"DROP INDEX {hnsw}")
