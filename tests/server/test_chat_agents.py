"""Agents through the proxy: chosen by header or by model name, scoped recall, persona, /v1/models."""

from __future__ import annotations

import openai
import pytest

from tests.helpers import extraction
from tests.server.test_chat_support import ai, proxied, view  # noqa: F401

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

MODEL = "scripted-model"


def ask(ai, text: str, model: str = MODEL, messages: list | None = None, **kwargs):  # noqa: F811
    messages = [*(messages or []), {"role": "user", "content": text}]
    return ai.chat.completions.with_raw_response.create(model=model, messages=messages, **kwargs)


def test_models_lists_the_upstream_model_and_the_callers_agents(ai, view):  # noqa: F811
    view.agent("cook")
    view.agent("coach", upstream_model="big-model")
    assert [m.id for m in ai.models.list()] == [MODEL, "cook", "coach"]


def test_facts_of_one_agent_are_never_injected_for_another(ai, view, scripted_llm):  # noqa: F811
    cook, coach = view.agent("cook"), view.agent("coach")
    view.add_fact("I am allergic to peanuts", agent_id=cook.id)
    scripted_llm.default_reply = "ok"

    as_cook = ask(ai, "What about peanuts in my dinner?", extra_headers={"X-Mnemo-Agent": "cook"})
    as_coach = ask(ai, "What about peanuts in my dinner?", extra_headers={"X-Mnemo-Agent": coach.id})

    to_cook, to_coach = (r["messages"] for r in proxied(scripted_llm))
    assert as_cook.headers["x-mnemo-recalled"] == "1"
    assert to_cook[0]["role"] == "system" and "peanuts" in to_cook[0]["content"]
    assert as_coach.headers["x-mnemo-recalled"] == "0" and len(to_coach) == 1


def test_a_turn_is_learnt_into_the_agent_that_had_it(ai, view, scripted_llm):  # noqa: F811
    coach = view.agent("coach")
    scripted_llm.reply("Good pace!")
    scripted_llm.reply_json(extraction("I run 5 km every morning"))

    ask(ai, "I run 5 km every morning", extra_headers={"X-Mnemo-Agent": "coach"})

    (job,) = view.settled_jobs(1)
    assert job.agent_id == coach.id
    assert [f.agent_id for f in view.facts()] == [coach.id]


def test_a_model_named_after_an_agent_picks_it_and_its_upstream_model(ai, view, scripted_llm):  # noqa: F811
    coach = view.agent("coach", upstream_model="big-model")
    view.agent("cook")
    view.add_fact("I train for a marathon in May", agent_id=coach.id)
    scripted_llm.default_reply = "ok"

    coached = ask(ai, "How far should I run for the marathon?", model="coach")
    ask(ai, "And what should I cook?", model="cook")
    ask(ai, "Unrelated", model="some-other-model")

    sent = proxied(scripted_llm)
    assert [r["model"] for r in sent] == ["big-model", MODEL, "some-other-model"]
    assert coached.headers["x-mnemo-recalled"] == "1"
    assert "marathon" in sent[0]["messages"][0]["content"]  # the memory block, the system message
    # a model that names no agent is the default agent, which reads non-private agents' facts
    assert "x-mnemo-recalled" in coached.headers


def test_the_persona_is_the_system_prompt_unless_the_client_sent_one(ai, view, scripted_llm):  # noqa: F811
    view.agent("pirate", persona="You are a pirate. Answer like one.")
    scripted_llm.default_reply = "Arr"

    ask(ai, "Hello", model="pirate")
    ask(ai, "Hello", model="pirate", messages=[{"role": "system", "content": "Be brief."}])

    first, second = (r["messages"] for r in proxied(scripted_llm))
    assert first[0] == {"role": "system", "content": "You are a pirate. Answer like one."}
    assert second[0] == {"role": "system", "content": "Be brief."} and len(second) == 2


def test_an_unknown_agent_header_is_a_404(ai, view):  # noqa: F811
    with pytest.raises(openai.NotFoundError, match="no agent 'nobody'"):
        ask(ai, "Hi", extra_headers={"X-Mnemo-Agent": "nobody"})
