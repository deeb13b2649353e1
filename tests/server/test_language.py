"""The person's language: a German conversation through the proxy gives German facts, which are
deduplicated and corrected like English ones (the official openai client → mnemo → the scripted
upstream, which is also the extractor and the reconciler)."""

from __future__ import annotations

import json
import re

import pytest

from mnemo.domain import Scope, Status
from tests.helpers import extraction
from tests.server.test_chat import say
from tests.server.test_chat_support import ai, proxied, view  # noqa: F401

pytestmark = pytest.mark.slow  # a real server

HOME = {"text": "Ich wohne in Berlin", "topic": "Wo wohne ich?", "speaker": "user", "message": 1}
TEA = {"text": "Ich trinke gern Kräutertee", "topic": "Was trinke ich gern?", "speaker": "user", "message": 1}
MOVED = {"text": "Ich wohne in München", "topic": "Wo wohne ich?", "speaker": "user", "message": 1}


def _extraction_requests(scripted_llm) -> list[dict]:
    return [r for r in scripted_llm.chat_requests() if "extraction" in json.dumps(r.get("response_format"))]


def _supersede_berlin(body: dict) -> str | None:
    """The reconciler: the new fact supersedes whichever shown fact says Berlin."""
    prompt = body["messages"][-1]["content"]
    if "reconciliation" not in json.dumps(body.get("response_format")):
        return None
    found = re.search(r"^(\d+)\. Ich wohne in Berlin", prompt, re.MULTILINE)
    target = int(found.group(1)) if found else None
    decision = {"new": 1, "action": "supersede" if target else "add", "target": target}
    return json.dumps({"decisions": [decision]})


def test_a_german_conversation_is_remembered_deduplicated_and_corrected_in_german(ai, view, scripted_llm):  # noqa: F811
    history: list = []

    def turn(said: str, answer: str, learnt: dict) -> None:
        scripted_llm.reply(answer)
        scripted_llm.reply_json(learnt)
        say(ai, said, history)
        history.extend([{"role": "user", "content": said}, {"role": "assistant", "content": answer}])

    turn("Ich wohne in Berlin und trinke gern Kräutertee.", "Schön!", extraction(HOME, TEA))
    view.settled_jobs(1)
    first = _extraction_requests(scripted_llm)[0]["messages"]
    assert "in the language the user wrote it in: never translate" in first[0]["content"]
    assert "[1] User: Ich wohne in Berlin und trinke gern Kräutertee." in first[1]["content"]
    assert sorted(f.text for f in view.facts()) == ["Ich trinke gern Kräutertee", "Ich wohne in Berlin"]

    # said again in other words, extracted as the same German sentence: one fact, mentioned twice
    turn("Wie gesagt: Kräutertee trinke ich gern.", "Notiert.", extraction(TEA))
    view.settled_jobs(2)
    (tea,) = [f for f in view.facts() if f.text == TEA["text"]]
    assert tea.mentions == 2 and len(view.facts()) == 2

    # moved: the German correction supersedes the German fact, found by its German topic
    scripted_llm.responder = _supersede_berlin
    turn("Ich bin letzte Woche nach München gezogen.", "Willkommen in München!", extraction(MOVED))
    view.settled_jobs(3)
    active = {f.text: f for f in view.facts()}
    assert sorted(active) == ["Ich trinke gern Kräutertee", "Ich wohne in München"]
    berlin = view.run(view.memory.get(Scope(view.user_id), active["Ich wohne in München"].supersedes))
    assert berlin.text == "Ich wohne in Berlin" and berlin.status == Status.SUPERSEDED

    # and the next turn's upstream request carries the German facts, untranslated
    scripted_llm.responder = None
    turn("Was soll ich heute Abend essen?", "Vielleicht Weißwurst.", extraction())
    block = proxied(scripted_llm)[-1]["messages"][0]
    assert block["role"] == "system" and "Ich wohne in München" in block["content"]
    assert "Ich wohne in Berlin" not in block["content"]
