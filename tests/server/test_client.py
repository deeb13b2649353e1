"""mnemo.client against a real server on loopback: every method, blocking and async, one
scenario for both; the API's errors as exceptions with its body; another person's ids."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mnemo.client import AsyncClient, Client, Conflict, Invalid, NotFound, Unauthorized
from mnemo.schemas import FactPublic, MePublic
from tests.server.api import new_user

pytestmark = pytest.mark.slow

Do = Callable[..., Awaitable[Any]]


def _blocking(client: Client) -> Do:
    async def do(name: str, *args: Any, **kwargs: Any) -> Any:
        found = getattr(client, name)(*args, **kwargs)
        return list(found) if inspect.isgenerator(found) else found

    return do


def _awaited(client: AsyncClient) -> Do:
    async def do(name: str, *args: Any, **kwargs: Any) -> Any:
        found = getattr(client, name)(*args, **kwargs)
        return [f async for f in found] if inspect.isasyncgen(found) else await found

    return do


async def scenario(do: Do, theirs: Do) -> None:
    """Every method of the client, with the answers the server's models give."""
    fact = await do("add", "I live in Porto", category="identity")
    assert isinstance(fact, FactPublic) and fact.text == "I live in Porto" and fact.version == 1
    again = await do("add", "I live in Porto")
    assert again.id == fact.id and again.version == 2  # a restatement reinforces: no duplicate
    assert (await do("get", fact.id)).text == "I live in Porto"
    for n in range(4):
        await do("add", f"My hobby number {n} is rowing boat {n}")
    first = await do("memories", limit=2)
    assert len(first.items) == 2 and first.next_offset == 2
    every = await do("all_memories", page_size=2)
    assert len(every) == 5 and len({f.id for f in every}) == 5
    assert [f.text for f in (await do("memories", q="Porto")).items] == ["I live in Porto"]

    moved = await do("update", fact.id, version=again.version, text="I live in Lisbon")
    assert moved.id == fact.id and moved.text == "I live in Lisbon"
    with pytest.raises(Conflict) as stale:
        await do("update", fact.id, version=again.version, text="I live in Faro")
    assert stale.value.status == 409 and stale.value.message
    hits = (await do("search", "where do I live?")).items
    assert hits[0].fact.text == "I live in Lisbon" and hits[0].reasons
    assert (await do("retract", fact.id, version=moved.version)).status == "retracted"
    assert (await do("memories", status="retracted")).items[0].id == fact.id
    assert (await do("restore", fact.id)).status == "active"
    assert [e.action for e in await do("history", fact.id)][:2] == ["create", "reinforce"]

    # another person's ids answer 404, and nothing of theirs changes
    with pytest.raises(NotFound) as missing:
        await theirs("get", fact.id)
    assert missing.value.status == 404 and "error" in missing.value.body
    with pytest.raises(NotFound):
        await theirs("retract", fact.id)
    assert (await do("get", fact.id)).status == "active"
    with pytest.raises(Invalid) as bad:
        await do("add", "")
    assert bad.value.status == 422 and bad.value.problems[0]["where"] == "body.text"
    with pytest.raises(NotFound):
        await do("get", "../me")  # an id is one path segment, never another route

    # settings, the gate and review
    me = await do("me")
    assert isinstance(me, MePublic) and me.enable_memory
    changed = await do("update_settings", sensitive_gate={"phone": "hold"}, review_policy="auto")
    assert changed.sensitive_gate["phone"] == "hold"
    assert (await do("update_settings", memory_enabled=None)).memory_enabled is None
    held = await do("add", "Call me on +351 912 345 678")
    other = await do("add", "My desk phone is +351 213 456 789")
    assert held.status == other.status == "candidate"
    assert {f.id for f in (await do("review")).items} == {held.id, other.id}
    assert (await do("approve", held.id)).status == "active"
    assert (await do("reject", other.id, reason="not mine")).status == "rejected"

    # erasure with its receipt
    plan = await do("preview_erasure", memory_id=held.id)
    assert [m.id for m in plan.memories] == [held.id]
    receipt = await do("erase", memory_id=held.id)
    assert receipt.kind == "memory" and receipt.signature
    assert (await do("receipt", receipt.id)).id == receipt.id
    assert [r.id for r in (await do("receipts")).items] == [receipt.id]
    assert (await do("get", held.id)).text == ""

    # turns
    said = [{"role": "user", "content": "Remember that I have a cat named Miso"}]
    result = await do("submit_turn", said)
    assert result.queued and result.job is not None
    listed = (await do("turns")).items
    assert [t.id for t in listed] == [result.job.id]
    assert (await do("turn", result.job.id)).id == result.job.id
    with pytest.raises(NotFound):
        await theirs("turn", result.job.id)
    skipped = await do("submit_turn", said, automation=True)
    assert not skipped.queued and skipped.reason

    # agents
    agent = await do("create_agent", "cook", private=True)
    assert agent.private and [a.id for a in await do("agents")] == [agent.id]
    assert (await do("update_agent", agent.id, persona="a chef")).persona == "a chef"
    await do("add", "I like saffron", agent_id=agent.id)
    gone = await do("delete_agent", agent.id)
    assert gone.agent.id == agent.id and gone.retracted == 1
    assert await do("agents") == []

    # keys and usage
    key = await do("create_key", "laptop")
    assert key.token.startswith("mnemo_") and key.id in {k.id for k in await do("keys")}
    assert (await do("revoke_key", key.id)).revoked_at is not None
    assert len((await do("usage")).days) == 30


def test_every_method_blocking(server):
    mine, theirs = new_user(server, "ana"), new_user(server, "bo")
    with Client(server.base_url, key=mine) as ana, Client(server.base_url, key=theirs) as bo:
        asyncio.run(scenario(_blocking(ana), _blocking(bo)))
        assert bo.memories().items == []  # nothing of ana's reached bo


async def test_every_method_async(server):
    mine, theirs = new_user(server, "ana"), new_user(server, "bo")
    async with AsyncClient(server.base_url, key=mine) as ana, AsyncClient(server.base_url, key=theirs) as bo:
        await scenario(_awaited(ana), _awaited(bo))
        assert (await bo.memories()).items == []


def test_a_wrong_or_missing_key_is_unauthorized(server, monkeypatch):
    monkeypatch.delenv("MNEMO_API_KEY", raising=False)
    for key in ("mnemo_0000000000000000_wrong", None):
        with Client(server.base_url, key=key) as client, pytest.raises(Unauthorized) as refused:
            client.me()
        assert refused.value.status == 401 and refused.value.message


def test_the_address_and_key_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("MNEMO_URL", server.base_url)
    monkeypatch.setenv("MNEMO_API_KEY", new_user(server, "env"))
    with Client() as client:
        assert client.me().user.name == "env"
