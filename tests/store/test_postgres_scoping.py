"""Every SQL statement the PostgreSQL store sends on a per-user table names its user.

docs/scaling.md plans to distribute the per-user tables by `user_id` (Citus)
on the claim that every query already filters by it. This test backs that
claim, or refutes it, from what mnemo really sends:

- a broad workload (tests/store/scoping_workload.py) runs through the public
  facade (Memory, the job Worker, and the few store methods nothing else
  calls) on a new database, which the store migrates itself; every statement
  that any psycopg cursor executes on behalf of mnemo is recorded, with the
  store function that sent it;
- each statement is judged by the checker in sql_scope.py (the rules are
  stated there): parsed by PostgreSQL's own parser, every reference to a
  per-user table (one with a row-level policy in the migrations) must be
  pinned to one user by a top-level `<table>.<owner> = <value>` condition,
  at every query level, and every INSERT must write the owner column;
- the bodies of the functions the migrations create are checked the same way,
  or exempted one by one (sql_scope.CROSS_USER_FUNCTIONS, PLPGSQL_FUNCTIONS)
  with the reason;
- a statement on no per-user table must match one rule of sql_scope.ALLOWED
  (each with its reason), so that a new kind of statement is looked at, not
  waved through.

A statement that fails is reported with the store function and line that sent
it. The workload must have run a large number of distinct statements, from
every function of the store modules that executes SQL, through both vector
search paths (exact scan and HNSW), so that the test cannot pass by running
little. The checker itself is tested on hand-written statements, so that a
pass means something.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from pglast import ast, parse_sql

from mnemo.store.postgres_search import nearest_sql
from tests.fakes.openai_server import ScriptedOpenAI
from tests.store.scoping_workload import upgrade_workload, workload
from tests.store.sql_scope import (
    ALLOWED,
    CROSS_USER_FUNCTIONS,
    PLPGSQL_FUNCTIONS,
    SQL_FUNCTIONS,
    Context,
    Recorder,
    Sent,
    Verdict,
    _body,
    _body_problems,
    _is_value,
    _language,
    _names,
    _plpgsql_problems,
    _strip,
    as_sent,
    judge_sql,
)


@dataclass
class Captured:
    sent: dict[str, Sent]
    ctx: Context
    functions: dict[str, ast.CreateFunctionStmt]  # the functions the migrations create


@pytest.fixture(scope="module")
def captured(postgres, embedder, tmp_path_factory) -> Iterator[Captured]:
    """Run the workload once on a new, unmigrated database; what the store sent, parsed (a few
    seconds: the tests that use it are marked slow)."""
    name = f"mnemo_scoping_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres.url(name)
    try:
        recorder = Recorder()
        with pytest.MonkeyPatch.context() as mp, ScriptedOpenAI() as llm:
            recorder.install(mp)
            asyncio.run(workload(url, embedder, llm, tmp_path_factory.mktemp("scoping"), recorder.sent))
            asyncio.run(upgrade_workload(postgres, embedder, mp))
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT table_name, array_agg(column_name::text ORDER BY ordinal_position)"
                " FROM information_schema.columns WHERE table_schema = current_schema() GROUP BY 1"
            ).fetchall()
    finally:
        with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    owners: dict[str, str] = {}
    functions: dict[str, ast.CreateFunctionStmt] = {}
    for text in recorder.sent:
        for raw in parse_sql(text):
            stmt = raw.stmt
            if isinstance(stmt, ast.CreatePolicyStmt):
                column = _strip(stmt.qual.lexpr)
                assert _is_value(stmt.qual.rexpr, frozenset(), setting=True), f"an unexpected policy: {text}"
                owners[stmt.table.relname] = _names(column.fields)[-1]
            elif isinstance(stmt, ast.CreateFunctionStmt):
                functions[stmt.funcname[-1].sval] = stmt
    ctx = Context(owners, dict(rows))
    for fname, stmt in functions.items():
        if fname not in CROSS_USER_FUNCTIONS and _language(stmt) == "sql" and not _body_problems(stmt, ctx):
            ctx.scoped_functions.add(fname)
    yield Captured(recorder.sent, ctx, functions)


def _failures(verdicts: dict[str, list[Verdict]], sent: dict[str, Sent]) -> str:
    lines = []
    for text, found in verdicts.items():
        problems = list(dict.fromkeys(p for v in found for p in v.problems))
        if problems:
            shown = " ".join(text.split())
            shown = shown if len(shown) <= 400 else shown[:400] + " …"
            lines.append(f"\n  {sent[text].origin}\n    {shown}")
            lines += [f"    - {p}" for p in problems]
    return "\n".join(lines)


# -- the tests ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_statement_on_a_per_user_table_names_its_user(captured):
    verdicts = {text: judge_sql(text, captured.ctx) for text in captured.sent}
    failures = _failures(verdicts, captured.sent)
    n = sum(1 for found in verdicts.values() if any(v.problems for v in found))
    assert not failures, (
        f"{n} of {len(verdicts)} distinct statements that mnemo sent are not confined to one user"
        " (see the rules in tests/store/sql_scope.py):" + failures
    )


@pytest.mark.slow
def test_every_function_the_migrations_create_is_scoped_or_exempt(captured):
    for fname, stmt in sorted(captured.functions.items()):
        if fname in CROSS_USER_FUNCTIONS:
            continue
        if _language(stmt) == "plpgsql":
            assert fname in PLPGSQL_FUNCTIONS, f"{fname}: a plpgsql function nobody has looked at"
            problems = _plpgsql_problems(fname, _body(stmt))
            assert not problems, f"{fname} {problems}"
            continue
        assert fname.startswith("mnemo_"), f"{fname}: mnemo's SQL functions are named mnemo_* (see judge)"
        assert _language(stmt) == "sql", f"{fname}: a {_language(stmt)} function nobody has looked at"
        problems = _body_problems(stmt, captured.ctx)
        assert not problems, f"{fname}'s body is not confined to one user: {problems}"
        assert fname in captured.ctx.scoped_functions
    # every exemption is still a function mnemo creates
    assert CROSS_USER_FUNCTIONS.keys() <= captured.functions.keys()
    assert PLPGSQL_FUNCTIONS.keys() <= captured.functions.keys()


@pytest.mark.slow
def test_the_workload_ran_every_function_that_sends_sql_and_both_search_paths(captured, embedder):
    sent = captured.sent
    # reads and writes of per-user tables (DDL aside): those judged scoped, or not
    on_user_tables = [
        text for text in sent if any(v.rule in ("scoped", "") for v in judge_sql(text, captured.ctx))
    ]
    assert len(sent) >= 120 and len(on_user_tables) >= 50, (
        f"only {len(sent)} distinct statements, {len(on_user_tables)} on per-user rows: the workload shrank"
    )
    # every function of the store's modules that calls execute() sent something
    assert {"mnemo.store.postgres", "mnemo.store.migrations.postgres"} <= SQL_FUNCTIONS.keys()
    expected = {
        f"{module}.{function}" for module, functions in SQL_FUNCTIONS.items() for function in functions
    }
    senders = {f for s in sent.values() for f in s.functions}
    assert len(expected) >= 45, sorted(expected)
    assert expected <= senders, f"sent no SQL during the workload: {sorted(expected - senders)}"
    # nearest neighbours: exact scan and graph walk, for one agent and for all of them
    dims = embedder.dimensions
    for by_index in (False, True):
        for all_agents in (False, True):
            assert as_sent(nearest_sql(dims, by_index=by_index, all_agents=all_agents), {}) in sent, (
                f"nearest_sql(by_index={by_index}, all_agents={all_agents}) never ran"
            )
    # the per-user tables come from the migrations' policies
    assert {"facts", "fact_vectors", "fact_events", "conversations", "messages", "jobs"} <= (
        captured.ctx.owners.keys()
    )
    # every rule of ALLOWED is still needed, and the checker judged the statements with them
    rules = {v.rule for text in sent for v in judge_sql(text, captured.ctx)}
    assert set(ALLOWED) <= rules, f"rules of ALLOWED that no statement needed: {set(ALLOWED) - rules}"
    assert "scoped" in rules


# Hand-written statements and what the checker must say of them: the checker
# itself is tested, so that a pass above means something.
UNSCOPED = [
    "SELECT text FROM facts WHERE id = %s",
    "SELECT text FROM facts WHERE id = %s OR user_id = %s",  # not a top-level AND condition
    "SELECT text FROM facts WHERE user_id = ANY (%s)",  # may name several users
    "SELECT text FROM facts WHERE user_id IN (%s, %s)",
    "SELECT text FROM facts f WHERE f.user_id = f.agent_id",  # no value
    "SELECT 1 FROM facts f WHERE f.user_id = %s"
    " AND EXISTS (SELECT 1 FROM fact_events e WHERE e.fact_id = f.id)",
    "SELECT f.text FROM facts f JOIN fact_vectors v ON v.fact_rowid = f.rowid WHERE f.user_id = %s",
    "SELECT f.text FROM facts f, agents a WHERE f.user_id = %s AND a.name = %s",
    "WITH mine AS (SELECT * FROM facts) SELECT * FROM mine WHERE user_id = %s",
    "SELECT * FROM (SELECT * FROM facts) AS f WHERE f.user_id = %s",
    "UPDATE facts SET pinned = true WHERE id = %s",
    "UPDATE facts SET pinned = true WHERE id = %s AND user_id = %s"
    " AND rowid = (SELECT fact_rowid FROM fact_vectors WHERE model = %s)",
    "DELETE FROM fact_vectors WHERE fact_rowid = %s",
    "INSERT INTO messages (id, conversation_id, role, content, created_at) VALUES (%s, %s, %s, %s, %s)",
    "INSERT INTO conversations VALUES (%s, DEFAULT, %s, %s)",
    "INSERT INTO fact_counts VALUES (%s, 1), (NULL, 2)",
    "INSERT INTO fact_counts (user_id, active) SELECT user_id, 1 FROM facts",
    "SELECT count(*) FROM jobs",
    "SELECT * FROM facts f WHERE f.user_id = mnemo_key_owner(%s)",
    "SELECT mnemo_claimant(%s, %s), (SELECT 1 FROM jobs WHERE user_id = %s)",
    "SELECT * FROM mnemo_unknown(%s) u JOIN facts f ON f.rowid = u.r WHERE f.user_id = %s",
    "SELECT now()",  # no per-user table, but no rule for it either
    "SELECT 1",
    "SELECT * FROM mnemo_unknown(%s)",  # a function whose body is not known to be scoped
    "SELECT mnemo_user_named(%s) FROM pg_class",  # a cross-user lookup is allowed alone only
    "SELECT set_config('mnemo.user_id', mnemo_key_owner(%s), true)",
    "TRUNCATE facts",
    # the transaction's user: the policies' value, but not one Citus can route by
    "SELECT 1 FROM fact_counts WHERE user_id = current_setting('mnemo.user_id', true)",
]
SCOPED = [
    "SELECT text FROM facts WHERE user_id = %s AND id = %s",
    "SELECT f.text FROM facts AS f WHERE f.user_id = %(user)s::text AND f.id = %(id)s",
    "SELECT f.text FROM fact_vectors v JOIN facts f ON f.rowid = v.fact_rowid AND v.user_id = f.user_id"
    " WHERE f.user_id = %s",
    "SELECT 1 FROM facts f WHERE f.user_id = %s AND EXISTS"
    " (SELECT 1 FROM fact_events e WHERE e.user_id = f.user_id AND e.fact_id = f.id)",
    "INSERT INTO conversations VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
    "INSERT INTO messages (id, user_id) VALUES (%s, 'u1'), (%s, %s)",
    "UPDATE users SET name = %s WHERE id = %s",
    "SELECT value FROM settings WHERE key = %s",
    # a function whose body is pinned to the transaction's user, called alone
    "SELECT fact_rowid, score FROM mnemo_lexical(%s, %s, NULL, 5, %s, %s)",
]


@pytest.mark.slow
@pytest.mark.parametrize("statement", UNSCOPED)
def test_the_checker_reports_an_unscoped_statement(captured, statement):
    verdicts = judge_sql(as_sent(statement, ()), captured.ctx)
    assert any(v.problems for v in verdicts), verdicts


@pytest.mark.slow
@pytest.mark.parametrize("statement", SCOPED)
def test_the_checker_passes_a_scoped_statement(captured, statement):
    verdicts = judge_sql(as_sent(statement, ()), captured.ctx)
    assert not any(v.problems for v in verdicts), verdicts


def test_the_checker_looks_into_plpgsql():
    assert _plpgsql_problems("f", "BEGIN RAISE EXCEPTION 'no'; END") == []
    assert _plpgsql_problems("f", "BEGIN DELETE FROM facts; END")
    assert _plpgsql_problems("f", "BEGIN PERFORM 1; END")
    assert _plpgsql_problems("f", "BEGIN IF (SELECT count(*) FROM facts) > 0 THEN RETURN NULL; END IF; END")
    assert _plpgsql_problems("f", "BEGIN RETURN (SELECT NEW FROM jobs LIMIT 1); END")


@pytest.mark.slow
def test_the_checker_reports_an_unscoped_statement_with_where_it_was_sent(captured):
    text = as_sent("SELECT text FROM facts WHERE id = %s", ("f1",))
    assert text == "SELECT text FROM facts WHERE id = $1"
    sent = {text: Sent(text, "mnemo/store/postgres.py:1 in somewhere")}
    report = _failures({text: judge_sql(text, captured.ctx)}, sent)
    assert "mnemo/store/postgres.py:1 in somewhere" in report
    assert "facts (in the statement): no top-level `facts.user_id = <value>` condition" in report
