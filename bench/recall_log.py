"""What recording a recall costs: the median recall with and without the recall log.

    .venv/bin/python bench/recall_log.py [--database-url postgresql://…] [--json]

One user with 1,000 facts (embedded by the local model); 200 recalls of the
default assistant with the log (`via`, as the proxy recalls) and 200 without
(as a person's own look), taken in turn so that both see the same machine; each
recall returns up to 10 facts, all of which the log records. The log is written
after a recall returns (mnemo/recall/log_writer.py), so each recall's rows are
written before the next recall, outside its time, as while a proxied reply is
forwarded. Also the median of the log's own write (`record_recalls`, the 10
rows of one recall). SQLite by default.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from mnemo.build import build_store
from mnemo.domain import RecallRecord, RecallVia, Scope, new_id, utcnow
from mnemo.memory import Memory
from mnemo.providers.embed import LocalEmbedder
from mnemo.settings import Settings

TOPICS = "tea coffee cycling running piano cello Lisbon Porto cats dogs hiking sailing".split()


async def run(database_url: str | None, n: int) -> dict[str, float]:
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), database_url=database_url)
    store = build_store(settings)
    memory = await Memory(store, LocalEmbedder(), settings=settings).open()
    try:
        user = await memory.accounts.user(f"bench-{new_id()}")
        scope = Scope(user.id)
        for i in range(1000):
            await memory.add(scope, f"I like {TOPICS[i % 12]} and {TOPICS[(i * 7) % 12]} ({i})")
        queries = [f"what about {TOPICS[i % 12]}?" for i in range(n)]
        with_log: list[float] = []
        without: list[float] = []
        for i, query in enumerate(queries):
            for via, times in ((RecallVia.PROXY, with_log), (None, without))[:: 1 if i % 2 else -1]:
                start = time.perf_counter()
                hits = await memory.recall(query, scope, limit=10, via=via)
                times.append((time.perf_counter() - start) * 1000)
                assert hits
                await memory.write_recall_log(user.id)  # as while a proxied reply is forwarded
        writes = []
        recalled = [h.fact.id for h in hits]
        for _ in range(n):
            now = utcnow()
            recall_id = new_id()
            rows = [(recall_id, RecallRecord(fact_id, None, now, RecallVia.PROXY)) for fact_id in recalled]
            start = time.perf_counter()
            await store.record_recalls(user.id, rows, now.replace(year=now.year - 1))
            writes.append((time.perf_counter() - start) * 1000)
        return {
            "recall_without_log_ms": statistics.median(without),
            "recall_with_log_ms": statistics.median(with_log),
            "log_write_ms": statistics.median(writes),
        }
    finally:
        await memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url")
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = asyncio.run(run(args.database_url, args.recalls))
    if args.json:
        print(json.dumps(out))
    else:
        for name, value in out.items():
            print(f"{name:24} {value:8.3f}")


if __name__ == "__main__":
    main()
