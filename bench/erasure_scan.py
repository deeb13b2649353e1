"""What finding the messages that say a text costs, and what it costs everyone else (SQLite).

    .venv/bin/python bench/erasure_scan.py [--messages 10000] [--json]

One person has `--messages` messages, a person's of 30 words and an assistant's of 250 by
turns, 1 in 100 of them saying "green tea"; another person has one. For each query (a rare
phrase, a word every message says, a text of no word characters, the texts of 20 memories
erased together) it measures one search for the messages that say it (what an erasure's
plan and "erase about" ask the store: `messages_saying`) and, while that search runs, the
longest time the other person's one-row store call (get_user, called in a loop) waited; and
the time to write the messages (100 a call). It measures one source tree; to compare two
(before and after a change), run it from each in turn, as

    PYTHONPATH=OTHER_TREE/src .venv/bin/python bench/erasure_scan.py

The figures are only comparable within one machine and one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from mnemo.domain import Message, Scope, utcnow
from mnemo.store.sqlite import SQLiteStore

WORDS = (
    "i we my our the a to and of in on at for with about from today yesterday tomorrow went saw"
    " met called bought cooked read wrote walked visited liked loved hated moved lived worked"
    " sister brother friend mother father doctor office garden kitchen market station city"
    " coffee bread apples music film book letter trip plan dinner lunch morning evening week"
).split()
QUERIES = {
    "rare": ["green tea"],
    "common": ["I"],
    "no_words": ["🍵"],
    # an erasure of 20 memories at once asks for the messages that say any of their texts
    "twenty_texts": [f"I met my {w} at the station" for w in WORDS[:20]],
}


def said(rng: random.Random, n: int) -> str:
    """A person's message (30 words) or, every other one, an assistant's reply (250)."""
    words = ["I"] + [rng.choice(WORDS) for _ in range(29 if n % 2 == 0 else 249)]
    if n % 100 == 0:
        words.insert(rng.randrange(1, 29), "green tea")
    if n % 500 == 0:
        words.append("🍵")
    return " ".join(words) + "."


async def other(store: SQLiteStore, user_id: str, done: asyncio.Event, waits: list[float]) -> None:
    """Another person's one-row call, again and again until `done`: how long each waited."""
    while not done.is_set():
        start = time.perf_counter()
        await store.get_user(user_id)
        waits.append(time.perf_counter() - start)
        await asyncio.sleep(0.001)


async def run(n: int) -> dict[str, float]:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "bench.db")
        await store.open()
        alice = Scope((await store.ensure_user("alice")).id)
        bob = (await store.ensure_user("bob")).id
        at = utcnow()
        per = 100
        batches = [
            [Message("user", said(rng, i)) for i in range(c, min(n, c + per))] for c in range(0, n, per)
        ]
        start = time.perf_counter()
        for c, messages in enumerate(batches):
            await store.save_messages(alice, f"c{c}", messages, at)
        out: dict[str, float] = {"write_ms": round((time.perf_counter() - start) * 1000, 1)}
        await store.save_messages(Scope(bob), "c0", [Message("user", "I like green tea")], at)
        for name, query in QUERIES.items():
            await store.messages_saying(alice.user_id, query)  # warm
            waits: list[float] = []
            done = asyncio.Event()
            pinger = asyncio.create_task(other(store, bob, done, waits))
            await asyncio.sleep(0.02)
            start = time.perf_counter()
            found = await store.messages_saying(alice.user_id, query)
            took = time.perf_counter() - start
            done.set()
            await pinger
            out[f"{name}_found"] = len(found)
            out[f"{name}_ms"] = round(took * 1000, 1)
            out[f"{name}_other_max_wait_ms"] = round(max(waits) * 1000, 1)
        await store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(run(args.messages))
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:32} {v}")


if __name__ == "__main__":
    main()
