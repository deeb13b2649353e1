"""The in-memory vector cache stays exact and consistent, also with a second process writing."""

from __future__ import annotations

import numpy as np

from mnemo.domain import Scope
from mnemo.memory import Memory
from mnemo.store import vectors
from mnemo.store.sqlite import SQLiteStore
from mnemo.store.vectors import Columns, Row, VectorCache
from tests.helpers import texts


def unit(*values: float) -> np.ndarray:
    v = np.array(values, np.float32)
    return v / np.linalg.norm(v)


def test_search_is_exact_and_filters_status_and_agent():
    cache = VectorCache()
    rows = [
        Row(1, unit(1, 0, 0), True, ""),
        Row(2, unit(0.9, 0.1, 0), False, ""),  # inactive
        Row(3, unit(0.8, 0.2, 0), True, "chef"),
        Row(4, unit(0, 1, 0), True, ""),
    ]
    found = cache.search(("u", "m"), 1, lambda: Columns.of(rows), unit(1, 0, 0), 10, ["", "chef"])
    assert [rid for rid, _ in found] == [1, 3, 4]
    assert abs(found[0][1] - 1.0) < 1e-6
    only_default = cache.search(("u", "m"), 1, lambda: Columns.of(rows), unit(1, 0, 0), 10, [""])
    assert [rid for rid, _ in only_default] == [1, 4]


def test_patches_follow_this_process_and_reloads_follow_others():
    cache = VectorCache()
    loads = []

    def load():
        loads.append(1)
        return Columns.of([Row(1, unit(1, 0), True, "")])

    cache.search(("u", "m"), 5, load, unit(1, 0), 5, None)
    cache.apply(("u", "m"), 5, 6, [Row(2, unit(0, 1), True, ""), Row(1, None, False, "")])
    found = cache.search(("u", "m"), 6, load, unit(0, 1), 5, None)
    assert [rid for rid, _ in found] == [2] and len(loads) == 1
    # another process moved the generation on: the next search reloads
    cache.search(("u", "m"), 9, load, unit(1, 0), 5, None)
    assert len(loads) == 2


def test_eviction_keeps_the_total_under_the_cap():
    cache = VectorCache(max_vectors=2)
    for user in ("a", "b", "c"):
        cache.search((user, "m"), 1, lambda: Columns.of([Row(1, unit(1, 0), True, "")]), unit(1, 0), 1, None)
    assert len(cache._entries) == 2 and ("a", "m") not in cache._entries


async def test_a_second_store_on_the_same_file_sees_new_and_retracted_facts(tmp_path, embedder):
    path = tmp_path / "shared.db"
    server = await Memory(SQLiteStore(path), embedder).open()
    worker = await Memory(SQLiteStore(path), embedder).open()
    alice = Scope((await server.accounts.user("alice")).id)
    kayak = await server.add(alice, "I own a red kayak")
    assert texts(await worker.recall("boat", alice, arms=("semantic",))) == ["I own a red kayak"]

    await server.retract(alice, kayak.id)
    await server.add(alice, "I own a blue canoe")
    assert texts(await worker.recall("boat", alice, arms=("semantic",))) == ["I own a blue canoe"]
    await worker.purge(alice, kayak.id)
    assert texts(await server.recall("boat", alice, arms=("semantic",))) == ["I own a blue canoe"]
    await server.close()
    await worker.close()


def test_a_commit_patches_the_arrays_in_place_and_holes_are_packed_away():
    """Appends fill preallocated slots (doubling when full); retractions and drops touch only their row;
    the search answers as a fresh load of the same rows would (the same facts, in the same order, the
    same cosines to float32 rounding), before and after packing."""
    rng = np.random.default_rng(3)
    by_rowid = {rid: unit(*rng.normal(size=8)) for rid in range(1, 201)}
    live = {rid: Row(rid, v, True, "chef" if rid % 3 == 0 else "") for rid, v in list(by_rowid.items())[:20]}
    cache = VectorCache()
    cache.search(("u", "m"), 1, lambda: Columns.of(live.values()), unit(*[1] * 8), 1, None)
    entry = cache._entries[("u", "m")]
    matrix = entry.matrix
    cache.apply(("u", "m"), 1, 2, [Row(5, None, False, "")])  # a retraction: same arrays
    assert entry.matrix is matrix
    live[5] = Row(5, by_rowid[5], False, "")
    generation = 2
    for rid in range(21, 201):  # appends grow the arrays by doubling
        live[rid] = Row(rid, by_rowid[rid], True, "")
        cache.apply(("u", "m"), generation, generation + 1, [live[rid]])
        generation += 1
    assert entry.matrix.shape[0] == 20 * 2**4 and entry.used == 200  # 20 loaded, doubled 4 times
    dropped = [rid for rid in range(1, 201) if rid % 4 != 0]
    for rid in dropped:
        cache.apply(("u", "m"), generation, generation + 1, [Row(rid, None, False, "", drop=True)])
        del live[rid]
        generation += 1
    assert entry.used < 200 and entry.size == len(live) == 50  # the holes were packed away
    for query in (unit(*rng.normal(size=8)) for _ in range(20)):
        for agents in (None, [""], ["", "chef"]):
            patched = cache.search(("u", "m"), generation, lambda: Columns(), query, 30, agents)
            fresh = VectorCache().search(("u", "m"), 0, lambda: Columns.of(live.values()), query, 30, agents)
            # the same facts in the same order; the cosines to float32 rounding (BLAS may sum a row
            # of a larger preallocated matrix in another order than the same row alone)
            assert [rid for rid, _ in patched] == [rid for rid, _ in fresh]
            assert np.allclose([c for _, c in patched], [c for _, c in fresh], rtol=0, atol=1e-6)
            assert all(rid not in dropped for rid, _ in patched)


def test_a_scan_runs_on_one_blas_thread_and_leaves_the_process_setting_alone():
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    assert before, "numpy's BLAS is not visible to threadpoolctl"
    with vectors._one_blas_thread():
        assert set(blas_threads()) == {1}
    assert blas_threads() == before


def clustered(rng: np.random.Generator, n: int, dims: int = 64) -> np.ndarray:
    """Unit vectors in 60 clusters, closer to embeddings than uniform noise."""
    centres = rng.normal(size=(60, dims))
    points = centres[rng.integers(0, 60, n)] + 0.4 * rng.normal(size=(n, dims))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def test_past_the_coarse_size_the_codes_best_are_scored_exactly_and_match_the_exact_scan():
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 6000)
    rows = [Row(i + 1, v, i % 7 != 0, "chef" if i % 5 == 0 else "") for i, v in enumerate(vectors)]
    coarse, exact = VectorCache(coarse_from=1000), VectorCache(coarse_from=10**9)
    found_share = []
    for query in clustered(rng, 40):
        for agents in (None, [""]):
            got = coarse.search(("u", "m"), 1, lambda: Columns.of(rows), query, 20, agents)
            want = exact.search(("u", "m"), 1, lambda: Columns.of(rows), query, 20, agents)
            assert len(got) == 20
            for rowid, score in got:  # exact cosines of rows the search may return
                row = rows[rowid - 1]
                assert row.active and (agents is None or row.agent == "")
                assert abs(score - float(vectors[rowid - 1] @ query)) < 1e-5
            assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
            found_share.append(len({r for r, _ in got} & {r for r, _ in want}) / 20)
    assert coarse._entries[("u", "m")].coarse is not None
    assert np.mean(found_share) >= 0.99


def test_the_codes_follow_appends_and_changed_vectors():
    rng = np.random.default_rng(6)
    vectors = clustered(rng, 3000)
    rows = [Row(i + 1, v, True, "") for i, v in enumerate(vectors)]
    cache = VectorCache(coarse_from=1000)
    cache.search(("u", "m"), 1, lambda: Columns.of(rows), vectors[0], 5, None)
    entry = cache._entries[("u", "m")]
    assert entry.coarse is not None and entry.coarse.rows == 3000

    codes = entry.coarse
    new, moved = clustered(rng, 2)
    cache.apply(("u", "m"), 1, 2, [Row(5000, new, True, "")])
    assert cache.search(("u", "m"), 2, lambda: Columns(), new, 1, None)[0][0] == 5000
    assert entry.coarse is codes and codes.rows == 3001  # the new vector appended to the codes

    cache.apply(("u", "m"), 2, 3, [Row(7, moved, True, "")])
    assert cache.search(("u", "m"), 3, lambda: Columns(), moved, 1, None)[0][0] == 7
    assert entry.coarse is not codes and entry.coarse is not None  # encoded again
    assert 7 not in [rid for rid, _ in cache.search(("u", "m"), 3, lambda: Columns(), vectors[6], 3, None)]


def test_a_patch_that_fails_half_way_drops_the_entry_instead_of_answering_from_it(caplog):
    """The commit is done by then: a patch that cannot be applied must not raise into it, nor leave
    a half-patched matrix to search; the next search loads the user's vectors again."""
    loads = []

    def load():
        loads.append(1)
        return Columns.of([Row(1, unit(1, 0), True, ""), Row(2, unit(0, 1), True, "")])

    cache = VectorCache()
    cache.search(("u", "m"), 1, load, unit(1, 0), 5, None)
    cache.apply(("u", "m"), 1, 2, [Row(3, unit(0, 1), True, ""), Row(2, unit(1, 0, 0), False, "")])

    assert ("u", "m") not in cache._entries and "could not be patched" in caplog.text
    assert [rid for rid, _ in cache.search(("u", "m"), 2, load, unit(0, 1), 5, None)] == [2, 1]
    assert len(loads) == 2


def test_several_queries_in_one_scan_answer_as_each_alone():
    """A recall's vector arms (the question, its name-free form, its parts) share one scan: each
    answer is the one its query would get alone, exact and past the coarse size alike."""
    rng = np.random.default_rng(8)
    vectors = clustered(rng, 3000)
    rows = [Row(i + 1, v, i % 7 != 0, "chef" if i % 5 == 0 else "") for i, v in enumerate(vectors)]
    queries = clustered(rng, 4)
    for coarse_from in (1000, 10**9):
        cache = VectorCache(coarse_from=coarse_from)
        for agents in (None, [""]):
            together = cache.search_many(("u", "m"), 1, lambda: Columns.of(rows), queries, 15, agents)
            alone = [cache.search(("u", "m"), 1, lambda: Columns.of(rows), q, 15, agents) for q in queries]
            for both, one in zip(together, alone, strict=True):  # cosines to float32 rounding
                assert len(both) == 15 and [r for r, _ in both] == [r for r, _ in one]
                assert np.allclose([c for _, c in both], [c for _, c in one], atol=1e-5)
    empty = VectorCache().search_many(("u", "m"), 1, lambda: Columns(), queries, 5, None)
    assert empty == [[], [], [], []]


async def test_a_recall_searches_its_vector_arms_in_one_scan(tmp_path, embedder):
    """On SQLite a question naming someone (the semantic and topic arms) scans the matrix once,
    and each arm still gets its own answer and its own timing."""
    store = SQLiteStore(tmp_path / "m.db")
    memory = await Memory(store, embedder).open()
    try:
        scope = Scope((await memory.accounts.user("u")).id)
        for text in ("Melanie loves hiking in the hills", "I like hiking with Melanie", "I play the cello"):
            await memory.add(scope, text)
        scans = []
        search_many = store._cache.search_many

        def counted(*args, **kwargs):
            scans.append(len(args[3]))
            return search_many(*args, **kwargs)

        store._cache.search_many = counted  # type: ignore[method-assign]
        timed: list[str] = []
        memory.recaller.observer = type("Seen", (), {"recall_arm": lambda self, arm, s: timed.append(arm)})()
        hits = await memory.recaller.recall(scope, "What does Melanie like about hiking?")
        assert scans == [2]  # the question and its name-free form, one scan
        assert {"semantic", "topic"} <= set(timed)
        assert any("topic" in h.reasons for h in hits) and any("semantic" in h.reasons for h in hits)
    finally:
        await memory.close()


def test_writing_one_models_vectors_keeps_the_others_cached_and_reloads_its_own():
    cache = VectorCache()
    loads: list[str] = []

    def load(model: str):
        def columns() -> Columns:
            loads.append(model)
            return Columns.of([Row(1, unit(1, 0), True, "")])

        return columns

    for model in ("first", "second"):
        cache.search(("u", model), 5, load(model), unit(1, 0), 5, None)
    cache.search(("v", "first"), 3, load("first"), unit(1, 0), 5, None)
    cache.moved_on("u", 5, 6, lambda model: model != "second")  # the second model's were written
    for model in ("first", "second"):
        cache.search(("u", model), 6, load(model), unit(1, 0), 5, None)
    cache.search(("v", "first"), 3, load("first"), unit(1, 0), 5, None)  # another person's: as it was
    assert loads == ["first", "second", "first", "second"]
    # an entry another process had already moved past is not taken for current
    cache.search(("u", "first"), 9, load("first"), unit(1, 0), 5, None)
    cache.moved_on("u", 8, 9, lambda model: True)
    cache.search(("u", "first"), 9, load("first"), unit(1, 0), 5, None)
    assert loads == ["first", "second", "first", "second", "first", "first"]


async def test_another_models_vectors_written_leave_the_searched_models_cache_in_place(tmp_path, embedder):
    """A second embedder's vectors are filled in after each write: that must not make the next
    search read the first model's vectors of the person again."""
    store = SQLiteStore(tmp_path / "m.db")
    memory = await Memory(store, embedder).open()
    try:
        scope = Scope((await memory.accounts.user("u")).id)
        for text in ("I keep bees", "I play the cello", "My sister lives in Porto"):
            await memory.add(scope, text)
        loads: list[str] = []
        load = store._load_vectors

        def counted(user_id: str, model: str):
            loads.append(model)
            return load(user_id, model)

        store._load_vectors = counted  # type: ignore[method-assign]
        assert texts(await memory.recall("bees", scope, arms=("semantic",)))[0] == "I keep bees"
        missing = await store.unembedded(scope.user_id, "another-model", 0, 10)
        written = await store.add_vectors(scope.user_id, "another-model", [(f, unit(1, 0)) for f in missing])
        assert written == 3
        assert texts(await memory.recall("cello", scope, arms=("semantic",)))[0] == "I play the cello"
        assert loads == [embedder.model_name]
    finally:
        await memory.close()
