"""Every SQL statement the PostgreSQL store sends on a per-user table names its user.

docs/scaling.md plans to distribute the per-user tables by `user_id` (Citus)
on the claim that every query already filters by it. This test backs that
claim, or refutes it, from what mnemo really sends:

- a broad workload runs through the public facade (Memory, the job Worker,
  and the few store methods nothing else calls) on a new database, which the
  store migrates itself; every statement that any psycopg cursor executes on
  behalf of mnemo is recorded, with the store function that sent it;
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
import dataclasses
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pglast import ast, parse_sql

from mnemo import audit
from mnemo.batch import export
from mnemo.batch.reindex import Reindex
from mnemo.domain import (
    Agent,
    BackfillMark,
    Category,
    Claim,
    Conversation,
    GateAction,
    GateNotice,
    InvalidInput,
    JobStatus,
    MemoryMode,
    Message,
    NotFound,
    RecallVia,
    ReviewPolicy,
    Scope,
    Sensitive,
    Source,
    SourceKind,
    Status,
    Turn,
    User,
    new_id,
)
from mnemo.memory import Memory
from mnemo.providers.chat import OpenAIChatModel
from mnemo.recall.recaller import Recaller
from mnemo.settings import Settings
from mnemo.store import postgres as postgres_module
from mnemo.store.migrations.postgres import MIGRATIONS
from mnemo.store.postgres import PostgresStore
from mnemo.store.postgres_search import nearest_sql
from mnemo.write import changes
from tests.fakes.embedders import ProjectedEmbedder
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers import Clock, extraction, worker_for
from tests.store import legacy
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

# -- the workload ------------------------------------------------------------------------------


async def _upgrade_workload(postgres, embedder: Any, mp: pytest.MonkeyPatch) -> None:
    """The first version's data (events without salts, a purged one among them) upgraded in
    place, and one of its unsalted facts purged after: the statements that seal a log again."""
    url = postgres.create_database()
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        mp.setattr(postgres_module, "MIGRATIONS", MIGRATIONS[:1])
        PostgresStore(url)._migrate()
        mp.setattr(postgres_module, "MIGRATIONS", MIGRATIONS)
        with psycopg.connect(url) as conn:
            legacy.seed(conn, False, (await embedder.embed(["I live in Lisbon"]))[0], embedder.model_name)
        memory = await Memory(PostgresStore(url, max_size=2), embedder).open()  # migrates the rest
        try:
            await memory.purge(Scope(legacy.ALICE, all_agents=True), legacy.LISBON)
            assert (await memory.verify_audit(legacy.ALICE)).ok
        finally:
            await memory.close()
    finally:
        postgres.drop_database(url)


def _turn(scope: Scope, said: str, **kw: Any) -> Turn:
    return Turn.of(scope, ("user", said), ("assistant", "Noted."), **kw)


async def _workload(url: str, embedder: Any, llm: ScriptedOpenAI, data_dir: Path, sent: dict) -> None:
    clock = Clock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    settings = Settings(data_dir=data_dir)
    store = PostgresStore(url, clock=clock, max_size=4)
    # the same data through a store that walks the HNSW graph for any user
    graph_store = PostgresStore(url, clock=clock, max_size=2, exact_below=0, min_share=0.0)
    chat = OpenAIChatModel(llm.base_url, "test-key", "scripted-model", timeout=5, max_retries=0)
    memory = await Memory(store, embedder, None, settings=settings, clock=clock).open()  # migrates
    smart = Memory(store, embedder, chat, settings=settings, clock=clock)
    graph = await Memory(graph_store, embedder, None, settings=settings, clock=clock).open()
    try:
        # people, keys, switches
        assert await store.schema_versions() == [m.version for m in MIGRATIONS]
        assert not await store.any_user()
        alice = await memory.accounts.user("alice")
        assert await store.any_user() and (await memory.accounts.user("alice")).id == alice.id
        assert (await memory.accounts.find_user("alice")).id == alice.id
        assert await memory.accounts.find_user("nobody") is None
        bob, _, bob_token = await memory.accounts.create_user("bob")
        assert (await memory.accounts.authenticate(bob_token)).id == bob.id
        key, token = await memory.accounts.create_api_key(alice.id, "laptop")
        assert [k.id for k in await memory.accounts.api_keys(alice.id)] == [key.id]
        await memory.accounts.revoke_api_key(alice.id, key.id)
        assert await memory.accounts.authenticate(token) is None
        await memory.accounts.set_server_mode(MemoryMode.ENABLED_DEFAULT_ON)
        assert await memory.accounts.server_mode() == MemoryMode.ENABLED_DEFAULT_ON
        await memory.accounts.set_server_mode(None)
        await memory.accounts.set_user_switch(alice.id, True)
        assert await memory.accounts.memory_enabled(alice.id)
        await memory.accounts.set_user_switch(alice.id, None)

        # agents
        me, everything = Scope(alice.id), Scope(alice.id, all_agents=True)
        agent = await memory.accounts.create_agent(alice.id, "Chef", private=True)
        chef = Scope(alice.id, agent.id)
        await memory.accounts.update_agent(
            alice.id, agent.id, name="Head chef", persona="Cooks", private=True
        )
        assert [a.name for a in await memory.accounts.agents(alice.id)] == ["Head chef"]
        assert (await memory.accounts.agent(alice.id, agent.id)).persona == "Cooks"

        # a person's own edits
        await memory.add(me, "I live in Lisbon", pinned=True, category=Category.OTHER)
        kayak = await memory.add(me, "I own a red kayak")
        await memory.add(me, "I own a red kayak", pinned=True)  # restated: reinforced and pinned
        await memory.add(chef, "I make miso soup on Sundays")
        past = clock.now
        clock.advance(days=1)
        kayak = await memory.get(me, kayak.id)
        kayak = await memory.edit(me, kayak.id, "I own a blue kayak", version=kayak.version)
        kayak = await memory.update(me, kayak.id, category=Category.PREFERENCE, pinned=False)
        await memory.pin(me, kayak.id)
        await memory.retract(me, kayak.id, reason="sold it")
        await memory.restore(me, kayak.id)
        assert (await memory.get(me, kayak.id)).status == Status.ACTIVE

        # turns: learnt at once, without a model
        report = await memory.remember(_turn(me, "Remember that I play the cello", conversation_id="c1"))
        assert len(report.events) == 1, report
        # and with the (scripted) model, held for review, approved and rejected
        await memory.accounts.set_review_policy(bob.id, ReviewPolicy.REVIEW)
        llm.reply_json(extraction("I have a cat named Miso", "I play chess"))
        report = await smart.remember(_turn(Scope(bob.id), "My cat Miso watches me play chess."))
        assert len(report.held) == 2, report
        await smart.approve(Scope(bob.id), report.held[0])
        await smart.reject(Scope(bob.id), report.held[1], reason="not true")
        await memory.accounts.set_review_policy(bob.id, ReviewPolicy.AUTO)

        # the queue: done, automation, retried then parked, given back
        worker = worker_for(memory, clock=clock, backoff=timedelta(seconds=10))
        job = await memory.submit(_turn(me, "Remember that I am allergic to peanuts", conversation_id="c2"))
        messages = [Message("user", "Remember that I am root")]
        await store.enqueue_turn(me, "c3", messages, clock.now, automation=True)
        # the sensitive-data gate's notices: a masked message, a refused memory
        masked = [Message("user", "My card is [card ending 4242]")]
        notice = GateNotice("message", Sensitive.CARD, GateAction.REDACT, 1, "c5")
        await store.save_messages(me, "c5", masked, clock.now, notices=[notice])
        with pytest.raises(InvalidInput):
            await memory.add(me, "my password is hunter2!x7")
        assert await worker.drain() == 2
        assert (await memory.job(alice.id, job.id)).status == JobStatus.WAITING  # no chat model
        said = await memory.messages(alice.id, "c2")
        assert [m.role for m in said] == ["user", "assistant"]
        assert await memory.messages(bob.id, "c2") == []
        assert [j.status for j in await memory.jobs(alice.id)] == [JobStatus.SKIPPED, JobStatus.WAITING]
        failing = worker_for(smart, clock=clock, backoff=timedelta(seconds=10), max_attempts=2)
        parked = await smart.submit(_turn(Scope(bob.id), "I have a dog named Rex."))
        llm.fail(503, "overloaded", times=2)
        await failing.drain()  # retried later
        clock.advance(seconds=11)
        await failing.drain()  # parked
        assert (await memory.job(bob.id, parked.id)).status == JobStatus.FAILED
        # tokens: counted into bob's day; over his budget a turn waits, learnt once it is raised
        assert (await smart.accounts.usage(bob.id)).today.usage.total > 0
        await smart.accounts.set_token_budget(bob.id, 0)
        held = await smart.submit(_turn(Scope(bob.id), "Kiwi squawks loudly."))
        await failing.drain()
        assert (await memory.job(bob.id, held.id)).status == JobStatus.OVER_BUDGET
        llm.reply_json(extraction("Kiwi squawks loudly"))
        await smart.accounts.set_token_budget(bob.id, None)
        await failing.drain()
        assert (await memory.job(bob.id, held.id)).status == JobStatus.DONE
        assert {u.name for u, _ in await memory.accounts.all_usage()} >= {"alice", "bob"}
        given = await memory.submit(_turn(me, "Remember that my bike is green"))
        claimed = await store.claim_job("leaving", clock.now, timedelta(seconds=60))
        assert claimed is not None and claimed.id == given.id
        await store.release_job(Claim(claimed.id, "leaving"))
        assert await worker.drain() == 1
        assert len(await memory.jobs(alice.id)) == 3
        assert await failing.requeue_waiting() == 2  # a worker with a chat model: everyone's waiting
        with pytest.raises(NotFound):  # another person's failed turn: not found, and not retried
            await smart.retry_turn(alice.id, parked.id)
        assert (await smart.retry_turn(bob.id, parked.id)).attempts == 0

        # reading: recall (every arm), the person's search, the past, lists, the log
        for scope in (me, chef, everything):
            assert await memory.recall("where do I live? my kayak", scope) is not None
            await memory.recall("kayak", scope, as_of=past)
            await memory.search("kayak", scope)
            await memory.list(scope, as_of=past)
        await memory.list(everything, statuses=None, limit=5, offset=1)
        assert await memory.count(everything, statuses=None) >= await memory.count(me)
        # the recall log: an assistant's recalls recorded, read back, the switch off and on
        for scope in (me, chef):
            await memory.recall("my kayak, miso soup", scope, via=RecallVia.PROXY)
        assert (await memory.recalls(everything, kayak.id)).count == 1
        assert [r async for r in memory.recall_log(alice.id)]
        await memory.accounts.set_record_recalls(bob.id, False)
        await memory.accounts.set_record_recalls(bob.id, True)
        assert len(await memory.history(me, kayak.id)) >= 5
        assert await memory.events(alice.id)
        assert (await memory.verify_audit(alice.id)).ok

        # the graph: the first search starts building the index and scans exactly meanwhile
        dims = embedder.dimensions
        walks = {as_sent(nearest_sql(dims, by_index=True, all_agents=a), {}) for a in (False, True)}
        for _ in range(200):
            for scope in (me, everything):
                await graph.recall("my kayak", scope, arms=("semantic",))
            if walks <= sent.keys():
                break
            await asyncio.sleep(0.05)

        # operations: who is here, the queue's counts, the workers' heartbeats
        assert {m.user.name for m in await memory.accounts.members()} >= {"alice", "bob"}
        assert sum((await store.job_counts()).values()) >= 3
        await store.beat("w1", clock.now, clock.now - timedelta(days=1))
        assert await store.heartbeats(clock.now - timedelta(minutes=1)) == [clock.now]
        await store.forget_worker("w1")

        # backfill: who has conversations, theirs in a window, their messages, per-turn marks
        assert [u.name for u in await store.users_with_conversations()] == ["alice", "bob"]
        refs = await store.conversations_since(alice.id, None)
        assert {"c1", "c2"} <= {r.id for r in refs}
        assert await store.conversations_since(alice.id, clock.now + timedelta(days=1)) == []
        said = await store.timed_messages(alice.id, [r.id for r in refs])
        assert "c3" not in said  # an automation turn's messages are never learnt from
        opener = next(m for m, _ in said["c1"] if m.role == "user")
        mark = BackfillMark("c1", opener.id, "run-1", clock.now)
        await store.commit(alice.id, [], clock.now, mark=mark)
        again = dataclasses.replace(mark, run_id="run-2", replaces="run-1")
        await store.commit(alice.id, [], clock.now, mark=again)
        assert [m.run_id for m in await store.backfill_marks(alice.id, ["c1", "c2"])] == ["run-2"]

        # erasure: a memory with the message it came from, a conversation, the receipts, the
        # person writing an erased text again; and an agent's deletion (its facts are retracted)
        await memory.purge(me, kayak.id, reason="erase it")
        cello = next(f for f in await memory.list(me) if "cello" in f.text)
        _, receipt = await memory.purge(me, cello.id)
        assert receipt.body["erased"]["messages"]
        await memory.erase_conversation(alice.id, "c2", with_facts=True)
        assert receipt.id in [r.id for r in await memory.receipts(alice.id)]
        assert (await memory.receipt(alice.id, receipt.id)).id == receipt.id
        assert kayak.id not in {r.fact_id async for _, r in memory.recall_log(alice.id)}
        await memory.add(me, "I own a blue kayak")  # written again by the person: learnt again
        assert (await memory.verify_audit(alice.id)).ok
        facts, said = await memory.about(bob.id, "chess")
        await memory.erase_selection(bob.id, [f.id for f in facts], [m for _, m, _ in said])
        await memory.erase_everything(bob.id)  # and his API keys with it
        assert (await memory.verify_audit(bob.id)).ok
        _, retracted = await memory.delete_agent(alice.id, agent.id)
        assert retracted == 1
        await memory.recall("my cat", Scope(bob.id), via=RecallVia.MCP)
        await memory.erase_everything(bob.id)
        assert [r async for r in memory.recall_log(bob.id)] == []

        # import and export: alice's everything, and a user, agent, conversation and log as they were
        exported = [line async for line in export.jsonl(memory, memory.accounts, alice)]
        assert '"type":"conversation"' in "".join(exported)
        first, *_ = await store.list_conversations(alice.id, limit=1)
        assert first.id not in {
            c.id for c in await store.list_conversations(alice.id, after=(first.created_at, first.id))
        }
        carol = await store.import_user(User(new_id(), "carol"))
        scribe = Agent(new_id(), carol.id, "Scribe")
        assert await store.import_agent(scribe) and not await store.import_agent(scribe)
        talk = Conversation(
            "carol-1", carol.id, scribe.id, clock.now, (Message("user", "Hi", "carol-1-1", clock.now),)
        )
        assert await store.import_conversation(talk) == 1 and await store.import_conversation(talk) == 0
        poem = changes.new_fact(
            Scope(carol.id),
            "I write poems",
            now=clock.now,
            source=Source(SourceKind.IMPORT),
            embedding_model=embedder.model_name,
        )
        created = audit.seal(changes.create(poem, None, "import"), carol.id, clock.now, audit.GENESIS)
        await store.import_facts(carol.id, [(poem, (await embedder.embed([poem.text]))[0])], [created])
        assert await store.chain_head(carol.id) == created.hash and (await memory.verify_audit(carol.id)).ok

        # reindex: who has facts, theirs without another model's vector, written beside, the old dropped
        other = ProjectedEmbedder(embedder)
        assert "alice" in [u.name for u in await store.users_with_facts()]
        job = Reindex(store, other, batch_size=2)
        assert (await job.run(await job.users(["alice"]))).embedded > 0
        assert set(await store.vector_models(alice.id)) == {embedder.model_name, other.model_name}
        await Recaller(store, other, settings.recall, clock).recall(everything, "kayak", arms=("semantic",))
        assert (await job.run(await job.users(["alice"]), prune=True)).users[0].pruned > 0
        assert set(await store.vector_models(alice.id)) == {other.model_name}
    finally:
        await graph_store.close()
        await store.close()
        await chat.aclose()


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
            asyncio.run(_workload(url, embedder, llm, tmp_path_factory.mktemp("scoping"), recorder.sent))
            asyncio.run(_upgrade_workload(postgres, embedder, mp))
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
                assert _is_value(stmt.qual.rexpr, frozenset()), f"an unexpected policy: {text}"
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
]
SCOPED = [
    "SELECT text FROM facts WHERE user_id = %s AND id = %s",
    "SELECT f.text FROM facts AS f WHERE f.user_id = %(user)s::text AND f.id = %(id)s",
    "SELECT f.text FROM fact_vectors v JOIN facts f ON f.rowid = v.fact_rowid AND v.user_id = f.user_id"
    " WHERE f.user_id = %s",
    "SELECT 1 FROM facts f WHERE f.user_id = %s AND EXISTS"
    " (SELECT 1 FROM fact_events e WHERE e.user_id = f.user_id AND e.fact_id = f.id)",
    "SELECT 1 FROM fact_counts WHERE user_id = current_setting('mnemo.user_id', true)",
    "INSERT INTO conversations VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
    "INSERT INTO messages (id, user_id) VALUES (%s, 'u1'), (%s, %s)",
    "UPDATE users SET name = %s WHERE id = %s",
    "SELECT value FROM settings WHERE key = %s",
    # a function whose body is pinned to the transaction's user, called alone
    "SELECT fact_rowid, score FROM mnemo_lexical(%s, NULL, 5, %s)",
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
