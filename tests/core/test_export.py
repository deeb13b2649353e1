"""The export of everything a person has (mnemo.batch.export), and the server secret it sits beside."""

from __future__ import annotations

import json

from mnemo.batch import export
from mnemo.domain import Scope


async def test_the_export_holds_the_person_their_agents_and_every_fact_with_its_history(memory, alice, bob):
    chef = await memory.accounts.create_agent(alice.user_id, "Chef", private=True)
    lisbon = await memory.add(alice, "I live in Lisbon")
    await memory.edit(alice, lisbon.id, "I live in Porto", version=1)
    await memory.add(Scope(alice.user_id, chef.id), "I cook with cast iron")
    gone = await memory.add(alice, "My PIN hint is my cat's name")
    await memory.purge(alice, gone.id)
    await memory.add(bob, "I live in Oslo")
    user = await memory.accounts.find_user("alice")

    lines = [line async for line in export.jsonl(memory, memory.accounts, user)]
    records = [json.loads(line) for line in lines]

    assert all(line.endswith("\n") and "\n" not in line[:-1] for line in lines)
    assert records[0]["type"] == "header" and records[0]["format"] == export.FORMAT
    assert records[0]["user"]["id"] == alice.user_id and records[0]["user"]["name"] == "alice"
    assert records[-1] == {
        "type": "end",
        "agents": 1,
        "facts": 3,
        "events": 5,
        "conversations": 0,
        "messages": 0,
        "recalls": 0,
    }
    assert [(r["name"], r["private"]) for r in records if r["type"] == "agent"] == [("Chef", True)]
    facts = {r["id"]: r for r in records if r["type"] == "fact"}
    assert len(facts) == 3  # the private agent's too; never bob's
    assert facts[lisbon.id]["text"] == "I live in Porto"
    assert [e["action"] for e in facts[lisbon.id]["events"]] == ["create", "edit"]
    assert facts[lisbon.id]["events"][1]["before"]["text"] == "I live in Lisbon"
    assert facts[gone.id]["purged"] and "PIN" not in json.dumps(facts[gone.id])
    assert "Oslo" not in "".join(lines)


async def test_a_secret_is_made_once_and_kept(memory):
    first = await memory.accounts.secret("web-forms")
    assert len(first) >= 40
    assert await memory.accounts.secret("web-forms") == first
    assert await memory.accounts.secret("something-else") != first
