"""PostgreSQL search: HNSW and the exact scan agree, filters do not starve the walk, and the
lexical arm drops common words on a large store as SQLite's does."""

from __future__ import annotations

import psycopg
import pytest
from pgvector.psycopg import register_vector_async
from psycopg import sql as sql_text

from mnemo.domain import Scope
from mnemo.memory import Memory
from mnemo.store.fulltext import COMMON_TERM_SHARE, SMALL_STORE
from mnemo.store.migrations.postgres import APP_ROLE, PROPAGATE_SETTINGS
from mnemo.store.migrations.postgres_security import definer, routed_lexical_sql
from mnemo.store.postgres_search import index_name, nearest_sql
from tests.helpers import bulk_add, raw_sql, texts, unrelated_facts

QUERIES = ["repairing a telescope", "my aunt's bicycle", "a camera I lost", "chess with my coach"]


# on one PostgreSQL and on a Citus cluster (each where --backend chooses it)
pytestmark = pytest.mark.parametrize("backend", ["postgres", "citus"], indirect=True)


async def plan(store, sql: str, params: dict, user_id: str, *settings: tuple[str, str]) -> str:
    """EXPLAIN of `sql` as the store would run it: application role, user, settings (SET LOCAL,
    which Citus sends on to the workers). The parameters are bound here, as literals: Citus
    shows the worker's plan of a statement without parameters only."""
    connect = psycopg.AsyncConnection.connect
    async with await connect(store.url, cursor_factory=psycopg.AsyncClientCursor) as conn:
        await conn.execute(f"SET ROLE {APP_ROLE}")
        await register_vector_async(conn)
        async with conn.transaction():
            await conn.execute(f"SET LOCAL {PROPAGATE_SETTINGS} = 'local'")
            await conn.execute(sql_text.SQL("SET LOCAL mnemo.user_id = {}").format(sql_text.Literal(user_id)))
            for name, value in settings:
                await conn.execute(sql_text.SQL("SET LOCAL {} = {}").format(sql_text.Identifier(name), value))
            cur = await conn.execute("EXPLAIN " + sql.replace("%(query)b", "%(query)s"), params)
            return "\n".join(r[0] for r in await cur.fetchall())


@pytest.fixture
async def seeded(memory, alice, bob, make_store, embedder):
    """Alice's and Bob's facts, and a store that always walks the graph beside one that never does."""
    chef = await memory.accounts.create_agent(alice.user_id, "Chef", private=True)
    await bulk_add(memory, alice, unrelated_facts(300)[::2])
    await bulk_add(memory, Scope(alice.user_id, chef.id), unrelated_facts(300)[1::2])
    await bulk_add(memory, bob, unrelated_facts(600)[300:])
    graph = await Memory(make_store(exact_below=0, min_share=0.0), embedder).open()
    assert await graph.store.build_vector_index(embedder.dimensions)
    exact = await Memory(make_store(exact_below=10**9), embedder).open()
    yield graph, exact, Scope(alice.user_id, chef.id)
    await graph.close()
    await exact.close()


@pytest.mark.slow
async def test_the_graph_walk_and_the_exact_scan_find_the_same_facts(seeded, alice, embedder):
    graph, exact, chef = seeded
    for scope in (alice, chef, Scope(alice.user_id, all_agents=True)):
        for query in QUERIES:
            vector = (await embedder.embed([query]))[0]
            walked = await graph.store.nearest(scope, vector, embedder.model_name, 10)
            scanned = await exact.store.nearest(scope, vector, embedder.model_name, 10)
            assert texts(walked) == texts(scanned) and len(walked) == 10, (scope, query)
            assert [round(h.score, 5) for h in walked] == [round(h.score, 5) for h in scanned]
            # Bob's 300 facts and the other agent's 150 are in the graph too: none may leak in
            own = {f.id for f in await exact.list(scope, limit=1000)}
            assert {h.fact.id for h in walked} <= own


@pytest.mark.slow
async def test_each_path_runs_the_plan_it_claims(seeded, alice, embedder):
    graph, _, _ = seeded
    vector = (await embedder.embed(["a telescope"]))[0]
    params = {"query": vector, "model": embedder.model_name, "k": 10, "user": alice.user_id, "agents": [""]}
    dims = len(vector)
    walk = await plan(
        graph.store,
        nearest_sql(dims, by_index=True, all_agents=False),
        params,
        alice.user_id,
        ("enable_sort", "off"),
    )
    assert index_name(dims) in walk
    # with the statistics autovacuum gathers, a table this small is read whole: the claim is that the
    # exact path cannot walk the graph, and takes the user's rows from their btree where reading is dearer
    await raw_sql(graph.store, "ANALYZE fact_vectors")
    exact = nearest_sql(dims, by_index=False, all_agents=False)
    scan = await plan(graph.store, exact, params, alice.user_id, ("enable_seqscan", "off"))
    assert "hnsw" not in scan and "fact_vectors_owner" in scan, scan


@pytest.mark.slow
async def test_small_users_are_scanned_exactly_and_large_ones_walk_the_graph(seeded, alice, embedder):
    graph, exact, _ = seeded
    async with graph.store._tx(alice.user_id) as tx:
        cur = tx.cursor
        assert await graph.store.search.use_index(cur, alice, embedder.model_name, 384) is True
        assert await exact.store.search.use_index(cur, alice, embedder.model_name, 384) is False
        assert await graph.store.search.use_index(cur, alice, "another-model", 384) is None


@pytest.mark.slow
async def test_common_words_are_left_out_of_full_text_search_on_a_large_store(memory, alice):
    await bulk_add(memory, alice, unrelated_facts(2100))  # each thing is in a tenth of them
    await memory.add(alice, "My niece is called Zephyrine")
    await raw_sql(memory.store, "ANALYZE facts")  # what autovacuum does as the store grows

    found = await memory.store.lexical(alice, "telescope for Zephyrine", 20)
    assert texts([f.fact for f in found]) == ["My niece is called Zephyrine"]
    # only common words: nothing to discriminate with, so the arm stays silent
    assert await memory.store.lexical(alice, "telescope", 20) == []


@pytest.mark.slow
async def test_a_word_is_searched_up_to_the_common_share_and_dropped_one_past_it(memory, alice):
    # 2,000 active facts: a word may be in 5% of them (100) and still be searched
    facts = [*unrelated_facts(1799), *(f"Marzipan note {i}" for i in range(100))]
    await bulk_add(memory, alice, [*facts, *(f"Quokka note {i}" for i in range(101))])

    found = await memory.store.lexical(alice, "marzipan or quokka", 300)
    assert len(found) == 100 and all(f.fact.text.startswith("Marzipan note") for f in found)
    assert all(f.score > 0 for f in found)
    assert await memory.store.lexical(alice, "quokka", 300) == []


@pytest.mark.slow
async def test_the_search_finds_migration_19s_facts_in_its_order(memory, alice, bob):
    """Migration 27 searches each word alone (a large store: through the index, a common word
    read only past its share; a small one: the person's facts read once) and scores in double
    precision: what it finds, and in which order, is what migration 19's search found, for
    words common (a tenth of the facts), frequent (a 25th) and rare."""
    rare = [
        "Zephyrine repaired a telescope with my cousin Ravi",
        "Ravi and Zephyrine sold a harp",
        "My harp teacher Oskar moved far away beyond the long northern river valley and its hills",
    ]
    await bulk_add(memory, alice, [*unrelated_facts(2100), *rare])  # at least SMALL_STORE facts
    await bulk_add(memory, bob, [*unrelated_facts(2100)[::5], *rare])  # fewer: read once
    with psycopg.connect(memory.store.url, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(routed_lexical_sql("lexical_19"))  # as migration 19 made it, under another name
        definer(cur, "lexical_19(text, text[], text[], integer, double precision, bigint)")
    questions = [
        ["zephyrine"],
        ["ravi", "lena"],
        ["harp", "telescope", "ravi"],
        ["otto", "sami", "kofi"],
        ["oskar", "ravi"],
    ]
    found: dict[tuple[str, str], list[list[int]]] = {}
    for person in (alice, bob):
        async with memory.store._tx(person.user_id) as tx:
            for name in ("lexical_19", "mnemo_lexical"):
                found[person.user_id, name] = []
                for words in questions:
                    await tx.cursor.execute(
                        f"SELECT fact_rowid FROM {name}(%s, %s, NULL, 60, %s, %s)",
                        (person.user_id, words, COMMON_TERM_SHARE, SMALL_STORE),
                    )
                    found[person.user_id, name].append([r[0] for r in await tx.cursor.fetchall()])
        assert found[person.user_id, "mnemo_lexical"] == found[person.user_id, "lexical_19"]
    assert [len(ids) for ids in found[alice.user_id, "mnemo_lexical"]] == [2, 60, 60, 60, 60]
    assert [len(ids) for ids in found[bob.user_id, "mnemo_lexical"]] == [2, 42, 60, 60, 23]
    # a rare word outweighs a frequent one, however long its fact
    oskar = await raw_sql(
        memory.store, "SELECT user_id, rowid FROM facts WHERE text LIKE 'My harp teacher Oskar%'"
    )
    assert sorted(
        (uid, ids[4][0]) for (uid, name), ids in found.items() if name == "mnemo_lexical"
    ) == sorted(oskar)


async def test_a_word_is_a_phrase_to_the_search_whatever_it_holds(memory, alice):
    # the store sends runs of word characters; the application role could send operators
    await bulk_add(memory, alice, ["I tune a harp on Sundays", "I am here", "Was it there?"])
    harp = await raw_sql(memory.store, "SELECT rowid FROM facts WHERE text = 'I tune a harp on Sundays'")
    async with memory.store._tx(alice.user_id) as tx:
        for words in (["-harp"], ["harp", "-harp"], ['"harp" or here'], ["!harp"]):
            await tx.cursor.execute(
                "SELECT fact_rowid FROM mnemo_lexical(%s, %s, NULL, 10, %s, %s)",
                (alice.user_id, words, COMMON_TERM_SHARE, SMALL_STORE),
            )
            assert await tx.cursor.fetchall() == harp, words


@pytest.mark.slow
async def test_a_small_store_searches_every_word(memory, alice):
    await bulk_add(memory, alice, unrelated_facts(200))
    await raw_sql(memory.store, "ANALYZE facts")
    found = await memory.store.lexical(alice, "telescope", 50)
    assert len(found) == 20 and all("telescope" in f.fact.text for f in found)


async def test_lexical_search_ranks_a_rare_word_first_and_sees_only_the_scope(memory, alice, bob):
    await bulk_add(memory, alice, unrelated_facts(100))
    await memory.add(alice, "I repaired the mandolin of Zephyrine")
    await memory.add(bob, "Zephyrine is my neighbour")
    found = await memory.store.lexical(alice, "who repaired a mandolin for Zephyrine", 5)
    assert texts([f.fact for f in found])[0] == "I repaired the mandolin of Zephyrine"
    assert "Zephyrine is my neighbour" not in texts([f.fact for f in found])
    scores = [f.score for f in found]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
