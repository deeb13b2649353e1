"""`mnemo serve` on PostgreSQL: chosen by a postgresql:// URL, with its worker, end to end."""

from __future__ import annotations

import pytest

from tests.helpers import extraction
from tests.postgres_server import SessionPostgres
from tests.server.api import add, client_for, new_user, ok, submit, texts, wait_for_job


@pytest.fixture
def server_settings(server_settings, postgres_url):
    url = SessionPostgres.as_url(postgres_url)
    assert url.startswith("postgresql://")
    return server_settings.model_copy(update={"database_url": url})


def test_the_server_runs_on_postgres_with_its_worker(server, client, scripted_llm):
    assert not (server.settings.data_dir / "mnemo.db").exists()
    add(client, "I live in Lisbon")
    scripted_llm.reply_json(extraction("I have a cat named Miso"))
    job = wait_for_job(client, submit(client, "My cat Miso knocked over a plant.")["job"]["id"])
    assert job["status"] == "done" and job["result"]["events"] == 1
    assert sorted(texts(ok(client.get("/v1/memories")))) == ["I have a cat named Miso", "I live in Lisbon"]

    with client_for(server, new_user(server, "mallory")) as other:
        assert texts(ok(other.get("/v1/memories"))) == []
        add(other, "I live in Oslo")
    assert "I live in Oslo" not in texts(ok(client.get("/v1/memories")))
