"""A broad workload through mnemo's public facade on a PostgreSQL database: what the SQL tests
watch the store send.

`workload` runs every kind of request the store serves (people, keys, agents, edits, turns with
and without a chat model, the queue, every recall arm and both vector search paths, the recall
log, backfill, erasure, import and export, reindex) on one database, through Memory, the job
Worker and the few store methods nothing else calls. tests/store/test_postgres_scoping.py
records and judges the statements it sends; tests/store/test_citus_routing.py runs it on a Citus
cluster where a statement that would run on more than one shard is an error.
`upgrade_workload` upgrades the first version's data in place (one PostgreSQL server only).
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

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
    NotRemembered,
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
from tests.store.sql_scope import as_sent


async def upgrade_workload(postgres, embedder: Any, mp: pytest.MonkeyPatch) -> None:
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


async def workload(url: str, embedder: Any, llm: ScriptedOpenAI, data_dir: Path, sent: dict) -> None:
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
        assert (await memory.accounts.authenticate(bob_token)).id == bob.id  # notes its last use
        assert (await memory.accounts.api_keys(bob.id))[0].last_used_at is not None
        assert (await memory.accounts.rename_user(bob.id, "robert")).name == "robert"
        await memory.accounts.rename_user(bob.id, "bob")
        assert (await memory.accounts.set_disabled(bob.id, True)).disabled_at is not None
        await memory.accounts.set_disabled(bob.id, False)
        assert (await memory.accounts.member(bob, None)).turns == {}
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
        # as the chat proxy stores a turn: unless the conversation was erased since it began
        began = clock.now
        job = await memory.submit(
            _turn(me, "Remember that I am allergic to peanuts", conversation_id="c2", began=began)
        )
        messages = [Message("user", "Remember that I am root")]
        await store.enqueue_turn(me, "c3", messages, clock.now, automation=True)
        assert not await memory.queue_full(me.user_id)  # the turns waiting, counted
        # the sensitive-data gate's notices: a masked message, a refused memory
        masked = [Message("user", "My card is [card ending 4242]")]
        notice = GateNotice("message", Sensitive.CARD, GateAction.REDACT, 1, "c5")
        await store.save_messages(me, "c5", masked, clock.now, notices=[notice])
        # a value found in a later message, masked in what the conversation held before
        (earlier,) = await store.save_messages(
            me, "c6", [Message("user", "Set it to Tr0ub4dor&3Zq")], clock.now
        )
        await store.save_messages(
            me,
            "c6",
            [Message("user", "my password is [credential]")],
            clock.now,
            notices=[GateNotice("message", Sensitive.CREDENTIAL, GateAction.BLOCK, 1, "c6")],
            rewrites=[(earlier.id or "", "Set it to [credential]")],
        )
        assert "Tr0ub4dor" not in str(await store.conversation_messages(alice.id, "c6"))
        with pytest.raises(InvalidInput):
            await memory.add(me, "my password is hunter2!x7")
        assert await worker.drain() == 2
        assert (await memory.job(alice.id, job.id)).status == JobStatus.WAITING  # no chat model
        said = await memory.messages(alice.id, "c2")
        assert [m.role for m in said] == ["user", "assistant"]
        assert await memory.messages(bob.id, "c2") == []
        # the conversations' list and page, every filter
        assert [c.id for c in await memory.conversation_list(alice.id, q="peanuts", agent=None, since=past)]
        assert (await memory.conversation(alice.id, "c2")).summary.messages == 2
        with pytest.raises(NotFound):
            await memory.conversation(bob.id, "c2")
        await memory.remember_conversation(me, "quiet", False)  # before its first turn
        with pytest.raises(NotRemembered):
            await memory.submit(_turn(me, "I like tea", conversation_id="quiet"))
        await memory.remember_conversation(me, "quiet", True)
        assert [j.status for j in await memory.jobs(alice.id)] == [JobStatus.SKIPPED, JobStatus.WAITING]
        turns = (await memory.accounts.member(alice, None)).turns
        assert turns == {"skipped": 1, "waiting": 1}
        jobs_now = await memory.jobs(alice.id)
        assert await memory.ids_starting(me, jobs_now[0].id[:-4], kind="turn") == [jobs_now[0].id]
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
        # the "Still true?" list, with every category going stale at once: read, kept, switched
        every_day = memory.settings.model_copy(
            update={"stale": memory.settings.stale.model_copy(update={c.value: 1 for c in Category})}
        )
        later = Memory(store, embedder, settings=every_day, clock=lambda: clock() + timedelta(days=400))
        unheard = await later.stale(me)
        assert unheard and all(f.valid_to is None for f in unheard)
        await later.keep(me, unheard[0].id)
        await memory.accounts.set_review_stale(bob.id, False)
        assert await later.stale(Scope(bob.id)) == []
        await memory.accounts.set_review_stale(bob.id, True)
        assert kayak.id in await store.fact_ids_starting(everything, kayak.id[:13], 5)  # the CLI's short ids
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
        # what a window leaves out: the user messages before it that no run learnt from
        openers = sum(m.role == "user" for messages in said.values() for m, _ in messages)
        _, left, oldest = await store.unlearnt_before(alice.id, clock.now + timedelta(days=1))
        assert left == openers - 1 and oldest is not None  # c1's opener is learnt

        # erasure: a memory with the message it came from, a conversation, the receipts, the
        # person writing an erased text again; and an agent's deletion (its facts are retracted)
        await memory.purge(me, kayak.id, reason="erase it")
        cello = next(f for f in await memory.list(me) if "cello" in f.text)
        _, receipt = await memory.purge(me, cello.id)
        assert receipt.body["erased"]["messages"]
        await memory.erase_conversation(alice.id, "c2", with_facts=True)
        assert receipt.id in [r.id for r in await memory.receipts(alice.id)]
        assert (await memory.receipt(alice.id, receipt.id)).id == receipt.id
        assert await memory.ids_starting(me, receipt.id[:-4], kind="receipt") == [receipt.id]
        assert kayak.id not in {r.fact_id async for _, r in memory.recall_log(alice.id)}
        await memory.add(me, "I own a blue kayak")  # written again by the person: learnt again
        assert (await memory.verify_audit(alice.id)).ok
        await memory.about(bob.id, "♟")  # no word to look up: every message is read, a page a trip
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
