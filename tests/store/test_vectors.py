"""The in-memory vector cache stays exact and consistent, also with a second process writing."""

from __future__ import annotations

import numpy as np

from mnemo.domain import Scope
from mnemo.memory import Memory
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
