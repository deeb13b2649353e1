"""Server secrets (the erasure digests' key, the receipts' signing key, the page's form key):
every process sharing a store holds the same one, however many start together, on both
backends."""

from __future__ import annotations

import asyncio

from mnemo.accounts import Accounts


async def test_the_first_writer_of_a_setting_wins_and_every_writer_reads_it(store):
    assert await store.first_setting("secret:x", "one") == "one"
    assert await store.first_setting("secret:x", "two") == "one"
    assert await store.get_setting("secret:x") == "one"


async def test_processes_starting_together_keep_one_secret(make_store, clock):
    """Eight stores on one database (as eight processes would open it) ask for the same new
    secrets at once: each name has one value, and every store was given it."""
    stores = [make_store(clock=clock) for _ in range(8)]
    for s in stores:
        await s.open()
    try:
        names = ("erased-texts", "receipts", "forms")
        asked = [(s, n) for s in stores for n in names]
        given = await asyncio.gather(*(Accounts(s).secret(n) for s, n in asked))
        for name in names:
            values = {value for (_, n), value in zip(asked, given, strict=True) if n == name}
            assert values == {await stores[0].get_setting(f"secret:{name}")}, name
    finally:
        for s in stores:
            await s.close()
