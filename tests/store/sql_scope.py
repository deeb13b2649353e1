"""The SQL scoping checker: is a statement that mnemo sends confined to one user's rows?

test_postgres_scoping.py records every statement the PostgreSQL store sends (Recorder, below) and
judges each one here (judge_sql):

- each statement is parsed by PostgreSQL's own parser (pglast, libpg_query);
- every reference to a per-user table (one with a row-level policy in the
  migrations: the set is read from the CREATE POLICY statements, with each
  policy's owner column) must be pinned to one user:

  - SELECT, UPDATE, DELETE, at every query level (subqueries and CTEs too):
    a top-level AND condition of the WHERE (or of a JOIN's ON) of the query
    level that reads the table is `<table or alias>.<owner> = <value>`, where
    the value is a parameter, a literal, a function's argument, or the owner
    column of another table of the same query already pinned (a join through
    `a.user_id = b.user_id`; outer query levels count for correlated
    subqueries). `user_id = ANY (…)` and `user_id IN (…)` do not count: they
    may name several users, so a distributed database could not send the
    statement to one shard; mnemo never needs them. Nor does
    `current_setting('mnemo.user_id')`, the transaction's user that the
    policies compare with: the planner sees a function call, not a value, so
    Citus sends such a statement to every shard (the policy then hides the
    other users' rows, but every shard is asked).
  - INSERT: the owner column is written, with such a value, in every row.

- the bodies of the functions the migrations create are checked the same way,
  or exempted one by one below with the reason (a plpgsql body may only raise
  or return, reading no table);
- a statement on no per-user table must match one rule of ALLOWED (each
  with its reason), so that a new kind of statement is looked at, not waved
  through.

Recorder wraps psycopg's cursors' execute and keeps every distinct statement that a
function of the store's modules sends (SQL_FUNCTIONS), as the server parses it, with the
store function and line that first sent it.
"""

from __future__ import annotations

import ast as pyast
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pglast import ast, enums, parse_plpgsql, parse_sql
from psycopg import sql as psql

from mnemo.store import postgres as store_module

# -- the store's functions that send SQL ---------------------------------------------------

STORE_DIR = Path(store_module.__file__).parent
SRC_DIR = STORE_DIR.parent.parent


# what a function calls to send SQL: a cursor's execute, or a transaction's (store/sql/tx.py)
_SENDS = {"execute", "one", "all", "many"}
# the executors: they pass statements on and are not their senders (the function that called
# them is); every statement the store sends passes through one of them
EXECUTORS = {"mnemo.store.sql.tx": None, "mnemo.store.postgres": {"execute", "one", "all", "many", "_answer"}}


def _executor(module: str, function: str) -> bool:
    return module in EXECUTORS and (EXECUTORS[module] is None or function in EXECUTORS[module])


def _own_nodes(function: pyast.AST) -> Iterator[pyast.AST]:
    """The nodes of a function's own body: a function defined inside it sends its own SQL."""
    for node in pyast.iter_child_nodes(function):
        if not isinstance(node, pyast.FunctionDef | pyast.AsyncFunctionDef | pyast.Lambda):
            yield node
            yield from _own_nodes(node)


def _sends_sql(function: pyast.AST) -> bool:
    return any(
        isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute) and call.func.attr in _SENDS
        for call in _own_nodes(function)
    )


def _sql_functions() -> dict[str, set[str]]:
    """The PostgreSQL store's modules (store/postgres*.py, store/migrations/postgres*.py), the
    SQL both stores share (store/sql/*.py) and, in each, the functions that send SQL (the
    executors aside); modules with none (the column lists) left out."""
    found = {}
    paths = [
        *STORE_DIR.glob("postgres*.py"),
        *STORE_DIR.glob("sql/*.py"),
        *STORE_DIR.glob("migrations/postgres*.py"),
    ]
    for path in sorted(paths):
        module = ".".join(path.relative_to(SRC_DIR).with_suffix("").parts)
        functions = {
            node.name
            for node in pyast.walk(pyast.parse(path.read_text()))
            if isinstance(node, pyast.FunctionDef | pyast.AsyncFunctionDef)
            and _sends_sql(node)
            and not _executor(module, node.name)
        }
        if functions:
            found[module] = functions
    return found


SQL_FUNCTIONS = _sql_functions()

# -- the exemptions ------------------------------------------------------------------------

# Functions of the migrations that look across users on purpose. Their bodies
# are not held to the rule; a statement may call them only on their own (no
# table beside them): what they answer is then what the statement learns.
CROSS_USER_FUNCTIONS = {
    # who is called this name: asked before any user is known (the CLI names
    # its user; the server's first start creates one). Reads `users`, a
    # reference table in the Citus plan.
    "mnemo_user_named": "finds a user by name, before anyone is known",
    # whether anyone is here yet (the server's first start): a yes/no over `users`
    "mnemo_any_user": "whether any user exists",
    # whose API key an id is: a request names its key before anyone knows the
    # user; answers the owner's id only, and the key is then read as that user
    "mnemo_key_owner": "the owner of an API key, before the user is known",
    # The job claim until migration 18: the queue is shared by every user, and a
    # worker took the oldest due job whoever's it was, FOR UPDATE SKIP LOCKED. On
    # Citus a lock cannot be taken over every shard, so migration 18 replaced it
    # with mnemo_claim_candidates and the claim pinned to one user, mnemo_claim_job_of.
    "mnemo_claim_job": "claimed the oldest due job of any user (SKIP LOCKED), until migration 18",
    # the users whose earliest open job is due, oldest due first, locking nothing: how a
    # worker learns whom to claim for (ids only); the claim itself is pinned to one of them
    "mnemo_claim_candidates": "the users whose next turn is due, before any is known",
    # whose job a claim is, while that worker holds it: how a worker that
    # holds only (job id, worker name) enters the job's user to finish it
    "mnemo_claimant": "the owner of a claimed job, before the user is known",
    # the jobs learnt without a chat model, queued again when a worker with one starts: the
    # queue is every user's, as the claim's is; it answers a count only
    "mnemo_requeue_waiting": "queues again every user's jobs that waited for a chat model",
    # who has conversations at all: `mnemo backfill` without --users walks
    # everyone's; ids only, and each user's conversations are then read as that user
    "mnemo_users_with_conversations": "the users backfill walks, before any is known",
    # who has facts at all: `mnemo reindex` without --users walks everyone's; ids
    # only, and each user's facts are then read and re-embedded as that user
    "mnemo_users_with_facts": "the users reindex walks, before any is known",
    # until migration 18: the words in more than a share of all facts, from the planner's
    # statistics of `tsv` (which cover every user, as statistics do), which the lexical
    # search dropped. Lexemes only, never a fact, an id or a user. A Citus coordinator has
    # no such statistics: the search now drops the words common in the user's own facts
    "mnemo_common_words": "the words too common to search by, from the planner's statistics",
    # how many vectors there are in all, from the counts each commit keeps: the share rule of
    # the HNSW-or-exact choice (it read pg_class.reltuples until migration 18). A count only
    "mnemo_vector_total": "the number of everyone's vectors, for the vector search's choice",
    # everyone's ids, in name order: `mnemo users list` and GET /v1/admin/users (run where
    # the database is, or with the admin key); each user is then read as that user
    "mnemo_user_ids": "every user's id, for the operator's list of users",
    # how many jobs are in each state, whoever's: /metrics. Counts only, never a user or text
    "mnemo_job_counts": "the number of jobs in each state, for /metrics",
}

# plpgsql functions: each named, with why it is harmless; the test also makes
# sure that the body only raises or returns, reading no table.
PLPGSQL_FUNCTIONS = {
    "fact_events_append_only": "the event log's trigger: it only raises, and reads no table",
}

# Statement kinds that change the schema, not rows: the migrations (run by
# the owner, once per database, before any user's data matters) and the HNSW
# index built on demand. On Citus, DDL on a distributed table is propagated
# to every shard.
DDL_KINDS = {
    "AlterFunctionStmt",
    "AlterTableStmt",
    "CreateExtensionStmt",
    "CreateFunctionStmt",
    "CreatePolicyStmt",
    "CreateStmt",
    "CreateTrigStmt",
    "DoStmt",  # the migration's role set-up, over pg_roles
    "DropStmt",  # an interrupted HNSW build's invalid index
    "GrantStmt",
    "IndexStmt",
}

# Functions that only configure the transaction or the session, and those that
# only take advisory locks (the commit's per-user lock is keyed by
# hashtext(user_id); the migration's and the index build's are global, being
# about the schema).
SETTING_FUNCTIONS = {"set_config", "current_setting", "pg_size_bytes"}
LOCK_FUNCTIONS = {
    "pg_advisory_lock",
    "pg_advisory_unlock",
    "pg_advisory_xact_lock",
    "pg_try_advisory_lock",
    "hashtext",
}


@dataclass(frozen=True)
class Parsed:
    """What the rules look at in one parsed statement."""

    kind: str
    tables: frozenset[str]  # every table it names (CTE names and pg_catalog excluded)
    functions: frozenset[str]  # every function it calls


def _catalog(p: Parsed) -> bool:
    return bool(p.tables) and all(t.startswith("pg_") for t in p.tables)


# A statement on no per-user table must match one of these; the first that
# matches names it. (rule: (reason, predicate))
ALLOWED: dict[str, tuple[str, Callable[[Parsed], bool]]] = {
    "schema change": (
        "migrations and the HNSW index build: no rows; Citus propagates DDL to every shard",
        lambda p: p.kind in DDL_KINDS,
    ),
    "connection set-up": (
        "SET ROLE mnemo_app and SET TIME ZONE on each pooled connection",
        lambda p: p.kind == "VariableSetStmt",
    ),
    "transaction settings": (
        "set_config: the transaction's user (mnemo.user_id, which is the scope itself),"
        " the HNSW walk's settings, the index build's memory",
        lambda p: (
            p.kind == "SelectStmt" and not p.tables and bool(p.functions) and p.functions <= SETTING_FUNCTIONS
        ),
    ),
    "advisory locks": (
        "the commit's per-user lock (keyed by hashtext(user_id)); the migration's and the"
        " index build's locks, which are about the schema",
        lambda p: (
            p.kind == "SelectStmt" and not p.tables and bool(p.functions) and p.functions <= LOCK_FUNCTIONS
        ),
    ),
    "system catalogs": (
        "pg_type (pgvector's type), pg_index and pg_class (is the HNSW index ready, how"
        " big is the table), current_schema() in the migrations",
        lambda p: (
            p.kind == "SelectStmt" and (_catalog(p) or (not p.tables and p.functions == {"current_schema"}))
        ),
    ),
    "schema_migrations": (
        "the versions applied: one per database, no user's",
        lambda p: p.tables == {"schema_migrations"},
    ),
    "settings": (
        "server-wide settings (the memory mode): no user's; a reference table in the Citus plan",
        lambda p: p.tables == {"settings"},
    ),
    "worker heartbeats": (
        "each job worker's last sign of life, for /readyz: a worker's name (host:pid) is no one's data",
        lambda p: p.tables == {"worker_heartbeats"},
    ),
    "cross-user lookups": (
        "a call, alone, of one of CROSS_USER_FUNCTIONS (see each one's reason)",
        lambda p: (
            p.kind == "SelectStmt"
            and not p.tables
            and bool(p.functions & CROSS_USER_FUNCTIONS.keys())
            and p.functions <= CROSS_USER_FUNCTIONS.keys()
        ),
    ),
}


# -- the checker ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)[sbt]|%[sbt]")


def as_sent(query: str, params: object) -> str:
    """psycopg's placeholders as PostgreSQL's $n (a repeated name keeps its number): the
    statement's text as the server parses it."""
    if params is not None:
        numbers: dict[str, int] = {}

        def number(m: re.Match) -> str:
            if m.group(0) == "%%":
                return "%"
            name = m.group(1) or f"#{len(numbers)}"
            return f"${numbers.setdefault(name, len(numbers) + 1)}"

        query = _PLACEHOLDER.sub(number, query)
    return query


@dataclass
class Context:
    """What the checker knows of the schema, read from the migrations and the database."""

    owners: dict[str, str]  # per-user table -> the column naming its user
    columns: dict[str, list[str]]  # table -> its columns in order (INSERT without a column list)
    scoped_functions: set[str] = field(default_factory=set)  # functions whose bodies passed


def _walk(node: Any) -> Iterator[ast.Node]:
    if isinstance(node, ast.Node):
        yield node
        for name in type(node).__slots__:
            yield from _walk(getattr(node, name))
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _walk(item)


def _children(node: ast.Node) -> Iterator[Any]:
    for name in type(node).__slots__:
        yield getattr(node, name)


def _names(fields: tuple) -> list[str] | None:
    if any(not isinstance(f, ast.String) for f in fields):
        return None  # `t.*`
    return [f.sval for f in fields]


def _func_name(call: ast.FuncCall) -> str:
    return call.funcname[-1].sval.lower()


def parsed(stmt: ast.Node) -> Parsed:
    ctes = {n.ctename for n in _walk(stmt) if isinstance(n, ast.CommonTableExpr)}
    tables = {
        n.relname
        for n in _walk(stmt)
        if isinstance(n, ast.RangeVar)
        and n.schemaname not in ("pg_catalog", "information_schema")
        and not (n.schemaname is None and n.relname in ctes)
    }
    functions = {_func_name(n) for n in _walk(stmt) if isinstance(n, ast.FuncCall)}
    return Parsed(type(stmt).__name__, frozenset(tables), frozenset(functions))


def _strip(expr: Any) -> Any:
    while isinstance(expr, ast.TypeCast):
        expr = expr.arg
    return expr


def _is_value(expr: Any, arguments: frozenset[str], setting: bool = False) -> bool:
    """A value that names one user: a parameter, a literal, an argument; with `setting`, the
    transaction's user too (`current_setting('mnemo.user_id')`, what the policies compare with:
    the planner sees a function call there, not a value, so Citus cannot route by it)."""
    expr = _strip(expr)
    if isinstance(expr, ast.ParamRef):
        return True
    if isinstance(expr, ast.A_Const):
        return not expr.isnull
    if setting and isinstance(expr, ast.FuncCall) and _func_name(expr) == "current_setting" and expr.args:
        first = _strip(expr.args[0])
        return isinstance(first, ast.A_Const) and getattr(first.val, "sval", None) == "mnemo.user_id"
    if isinstance(expr, ast.ColumnRef):
        names = _names(expr.fields)
        return names is not None and len(names) == 1 and names[0] in arguments
    return False


def _conjuncts(expr: Any) -> list[Any]:
    if expr is None:
        return []
    if isinstance(expr, ast.BoolExpr) and expr.boolop == enums.BoolExprType.AND_EXPR:
        return [c for a in expr.args for c in _conjuncts(a)]
    return [expr]


@dataclass
class _Ref:
    alias: str
    table: str | None  # None: a CTE, a subquery or a function in FROM


@dataclass
class _Block:
    """One query level: a SELECT (or VALUES), UPDATE or DELETE, its FROM items and its conditions."""

    refs: list[_Ref]
    equalities: list[tuple[Any, Any]]
    pinned: set[int] = field(default_factory=set)  # indexes into refs


def _block(node: ast.Node, ctes: set[str]) -> _Block:
    items: list[Any] = list(getattr(node, "fromClause", None) or ())
    if isinstance(node, ast.UpdateStmt):
        items.insert(0, node.relation)
    elif isinstance(node, ast.DeleteStmt):
        items = [node.relation, *(node.usingClause or ())]
    refs: list[_Ref] = []
    quals = [node.whereClause]

    def add(item: Any) -> None:
        if isinstance(item, ast.JoinExpr):
            add(item.larg)
            add(item.rarg)
            quals.append(item.quals)
        elif isinstance(item, ast.RangeVar):
            alias = item.alias.aliasname if item.alias else item.relname
            is_table = item.schemaname is not None or item.relname not in ctes
            refs.append(_Ref(alias, item.relname if is_table else None))
        else:
            alias = getattr(getattr(item, "alias", None), "aliasname", None) or "?"
            refs.append(_Ref(alias, None))

    for item in items:
        add(item)
    equalities = []
    for q in quals:
        for c in _conjuncts(q):
            if (
                isinstance(c, ast.A_Expr)
                and c.kind == enums.A_Expr_Kind.AEXPR_OP
                and [n.sval for n in c.name] == ["="]
            ):
                equalities.append((_strip(c.lexpr), _strip(c.rexpr)))
    return _Block(refs, equalities)


def _resolve(expr: Any, chain: list[_Block]) -> tuple[_Block, int, str] | None:
    """The FROM item (query level, index) and column a column reference names, if it is clear."""
    if not isinstance(expr, ast.ColumnRef):
        return None
    names = _names(expr.fields)
    if names is None or len(names) > 2:
        return None
    if len(names) == 1:  # unqualified: clear when the query level reads one thing only
        if len(chain[-1].refs) == 1:
            return chain[-1], 0, names[0]
        return None
    for block in reversed(chain):
        for i, ref in enumerate(block.refs):
            if ref.alias == names[0]:
                return block, i, names[1]
    return None


def _pin(chain: list[_Block], owners: dict[str, str], arguments: frozenset[str]) -> None:
    """Mark the per-user tables of chain[-1] that its conditions tie to one user."""
    block = chain[-1]

    def owner_of(found: tuple[_Block, int, str] | None) -> tuple[_Block, int] | None:
        if found is None:
            return None
        b, i, column = found
        table = b.refs[i].table
        return (b, i) if table in owners and owners[table] == column else None

    changed = True
    while changed:
        changed = False
        for left, right in block.equalities:
            for this, other in ((left, right), (right, left)):
                mine = owner_of(_resolve(this, chain))
                if mine is None or mine[0] is not block or mine[1] in block.pinned:
                    continue
                theirs = owner_of(_resolve(other, chain))
                if _is_value(other, arguments) or (theirs is not None and theirs[1] in theirs[0].pinned):
                    block.pinned.add(mine[1])
                    changed = True


def _insert_problems(node: ast.InsertStmt, ctx: Context, arguments: frozenset[str]) -> list[str]:
    table = node.relation.relname
    owner = ctx.owners.get(table)
    if owner is None:
        return []
    if node.cols:
        columns = [c.name for c in node.cols]
    elif table in ctx.columns:
        columns = ctx.columns[table]
    else:
        return [f"INSERT INTO {table}: no column list, and the table's columns are unknown"]
    if owner not in columns:
        return [f"INSERT INTO {table} does not write {owner}"]
    i = columns.index(owner)
    select = node.selectStmt
    if select is None:
        return [f"INSERT INTO {table} DEFAULT VALUES does not write {owner}"]
    values = [row[i] for row in select.valuesLists] if select.valuesLists else [select.targetList[i].val]
    if not all(_is_value(v, arguments) for v in values):
        return [f"INSERT INTO {table} writes {owner} from something other than a value"]
    return []


def scoping_problems(stmt: ast.Node, ctx: Context, arguments: frozenset[str] = frozenset()) -> list[str]:
    """Why `stmt` is not confined to one user's rows of every per-user table it reads or writes."""
    ctes = {n.ctename for n in _walk(stmt) if isinstance(n, ast.CommonTableExpr)}
    problems: list[str] = []

    def visit(node: Any, chain: list[_Block], depth: int) -> None:
        if isinstance(node, list | tuple):
            for item in node:
                visit(item, chain, depth)
            return
        if not isinstance(node, ast.Node):
            return
        if isinstance(node, ast.InsertStmt):
            problems.extend(_insert_problems(node, ctx, arguments))
        if isinstance(node, ast.SelectStmt | ast.UpdateStmt | ast.DeleteStmt):
            chain = [*chain, _block(node, ctes)]
            _pin(chain, ctx.owners, arguments)
            for i, ref in enumerate(chain[-1].refs):
                if ref.table in ctx.owners and i not in chain[-1].pinned:
                    owner = ctx.owners[ref.table]
                    where = "the statement" if depth == 0 else "a subquery"
                    problems.append(
                        f"{ref.table}{f' {ref.alias}' if ref.alias != ref.table else ''} (in {where}):"
                        f" no top-level `{ref.alias}.{owner} = <value>` condition"
                    )
            depth += 1
        for child in _children(node):
            visit(child, chain, depth)

    visit(stmt, [], 0)
    return problems


@dataclass
class Verdict:
    rule: str  # "scoped", a rule of ALLOWED, or "" when it fails
    problems: list[str]


def judge(stmt: ast.Node, ctx: Context, arguments: frozenset[str] = frozenset()) -> Verdict:
    """The checker: scoped, allowed by a rule of ALLOWED, or the problems."""
    p = parsed(stmt)
    if p.kind in DDL_KINDS:  # first: DDL names per-user tables without touching their rows
        return Verdict("schema change", [])
    # mnemo's own functions (the migrations' functions are all named mnemo_*)
    own = {f for f in p.functions if f.startswith("mnemo_")}
    if p.tables & ctx.owners.keys():
        if p.kind not in ("SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt"):
            return Verdict("", [f"a {p.kind} on a per-user table"])
        problems = scoping_problems(stmt, ctx, arguments)
        for f in sorted(own & CROSS_USER_FUNCTIONS.keys()):
            problems.append(f"calls the cross-user function {f} beside per-user tables")
        for f in sorted(own - CROSS_USER_FUNCTIONS.keys() - ctx.scoped_functions):
            problems.append(f"calls {f}, whose body is not known to be scoped")
        return Verdict("" if problems else "scoped", problems)
    if p.kind == "SelectStmt" and not p.tables and own and own <= ctx.scoped_functions:
        # a call, alone, of functions whose bodies are pinned to one user (an argument, or the
        # transaction's user): the lexical search and the claim of one user's job. On Citus the
        # call runs on the coordinator and each statement of its body is routed to one shard
        return Verdict("scoped", [])
    for rule, (_, allows) in ALLOWED.items():
        # only a cross-user lookup may call mnemo's functions without a per-user table
        if allows(p) and (not own or rule == "cross-user lookups"):
            return Verdict(rule, [])
    return Verdict("", [f"reads no per-user table, but no rule of ALLOWED covers it: {p}"])


def judge_sql(text: str, ctx: Context, arguments: frozenset[str] = frozenset()) -> list[Verdict]:
    return [judge(raw.stmt, ctx, arguments) for raw in parse_sql(text)]


# -- the functions' bodies -----------------------------------------------------------------


def _option(stmt: ast.CreateFunctionStmt, name: str) -> Any:
    return next(o.arg for o in stmt.options if o.defname == name)


def _language(stmt: ast.CreateFunctionStmt) -> str:
    return _option(stmt, "language").sval.lower()


def _body(stmt: ast.CreateFunctionStmt) -> str:
    return _option(stmt, "as")[0].sval


def _body_problems(stmt: ast.CreateFunctionStmt, ctx: Context) -> list[str]:
    arguments = frozenset(
        p.name
        for p in stmt.parameters or ()
        if p.name
        and p.mode
        in (enums.FunctionParameterMode.FUNC_PARAM_IN, enums.FunctionParameterMode.FUNC_PARAM_DEFAULT)
    )
    return [problem for v in judge_sql(_body(stmt), ctx, arguments) for problem in v.problems]


def _expression_tables(expression: str) -> frozenset[str]:
    return parsed(parse_sql(f"SELECT {expression}")[0].stmt).tables


def _plpgsql_problems(name: str, body: str) -> list[str]:
    """What a plpgsql body does beyond blocks, RAISE and RETURN of expressions on no table."""
    tree = parse_plpgsql(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $f${body}$f$")
    problems = []

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key.startswith("PLpgSQL_stmt_") and key not in (
                    "PLpgSQL_stmt_block",
                    "PLpgSQL_stmt_raise",
                    "PLpgSQL_stmt_return",
                ):
                    problems.append(f"runs a {key}")
                # parseMode 2: an expression (anything else is a statement)
                if key == "PLpgSQL_expr" and (
                    value.get("parseMode") != 2 or _expression_tables(value["query"])
                ):
                    problems.append(f"evaluates {value['query']!r}")
                visit(value)

    visit(tree)
    return problems


# -- capturing what the store sends ----------------------------------------------------------


@dataclass
class Sent:
    sql: str  # as the server parses it ($n parameters)
    origin: str  # "mnemo/store/sql/jobs.py:24 in job": where the store first sent it
    functions: set[str] = field(default_factory=set)  # every "module.function" that sent it


class Recorder:
    """Wraps psycopg's cursors' execute (sync and async): every connection the store
    opens (the pool, the migrations, the index build) goes through them."""

    def __init__(self) -> None:
        self.sent: dict[str, Sent] = {}

    def record(self, cursor: Any, query: Any, params: object) -> None:
        sender = None
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if module in SQL_FUNCTIONS and not _executor(module, frame.f_code.co_name):
                sender = frame
                break
            frame = frame.f_back
        if sender is None:
            return  # not mnemo's store (the test's own set-up)
        if isinstance(query, psql.Composable):
            query = query.as_string(cursor)
        elif isinstance(query, bytes):
            query = query.decode()
        text = as_sent(query, params)
        module = sender.f_globals["__name__"]
        entry = self.sent.get(text)
        if entry is None:
            path = Path(sender.f_code.co_filename).relative_to(SRC_DIR)
            origin = f"{path}:{sender.f_lineno} in {sender.f_code.co_name}"
            entry = self.sent[text] = Sent(text, origin)
        entry.functions.add(f"{module}.{sender.f_code.co_name}")

    def install(self, mp: pytest.MonkeyPatch) -> None:
        record = self.record
        sync_execute, async_execute = psycopg.Cursor.execute, psycopg.AsyncCursor.execute

        def execute(self, query, params=None, **kw):
            record(self, query, params)
            return sync_execute(self, query, params, **kw)

        async def aexecute(self, query, params=None, **kw):
            record(self, query, params)
            return await async_execute(self, query, params, **kw)

        mp.setattr(psycopg.Cursor, "execute", execute)
        mp.setattr(psycopg.AsyncCursor, "execute", aexecute)
