"""bench/load.py in a tiny form, on SQLite (on PostgreSQL too with MNEMO_LONG_TESTS=1): a real
`mnemo serve` under a few concurrent clients (chat through the `openai` client, recall, add, edit;
several people with their own keys) answers every request with a 2xx, and after the queue drains
every chat turn answered has its stored messages and a finished job, once. Speed is the
benchmark's business, never asserted here."""

from __future__ import annotations

import os

import pytest

from bench.load import OPS, run_backend

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

BACKENDS = ["sqlite", "postgres"] if os.environ.get("MNEMO_LONG_TESTS") == "1" else ["sqlite"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_short_load_loses_no_turn_and_answers_every_request(backend, database_url, tmp_path):
    result = await run_backend(
        backend,
        database_url,
        clients=4,
        seconds=3,
        baseline_seconds=0.5,
        users=2,
        drain_timeout=120,
        workdir=tmp_path,
    )
    assert result["errors"] == {}
    done = result["load"]
    assert sum(done[op]["ops"] for op in OPS) == done["all"]["ops"] >= 4  # every client got through
    assert done["chat"]["ops"] + result["baseline"]["chat"]["ops"] > 0
    turns = result["turns"]
    assert result["drain_s"] is not None
    assert turns["sent"] == done["chat"]["ops"] + result["baseline"]["chat"]["ops"]
    assert turns["lost"] == turns["doubled"] == turns["unanswered"] == 0 and turns["kept"] == turns["sent"]
    assert turns["jobs"] == turns["jobs_done"] == turns["sent"] and turns["jobs_failed"] == 0
