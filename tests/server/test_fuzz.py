"""Schemathesis against a real server on loopback: every operation of /openapi.json, on both backends.

Each case is sent with a real key (the admin key for /v1/admin/*, the first user's
key for everything else), once with data that fits the schema and once with data
that does not, and its answer must pass all of schemathesis's checks: no 5xx, only
documented status codes, bodies, headers and content types as the schema says,
and invalid data refused. A few examples per operation and mode by default;
`MNEMO_LONG_TESTS=1` runs many more, each with a fresh random seed.

(schemathesis's own `from_fixture` loader fails under pytest 9, which dropped
`Function._nodeid`; the cases are drawn here from each operation's strategy.)
"""

from __future__ import annotations

import os
from datetime import datetime

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.server.conftest import ADMIN_KEY

pytestmark = pytest.mark.slow  # each test runs a real server (or `mnemo serve` processes)

LONG = os.environ.get("MNEMO_LONG_TESTS") == "1"
EXAMPLES = 150 if LONG else 6


def _refused_combination(case) -> str | None:
    """What the server says to a combination of valid parameters it refuses, which OpenAPI cannot
    state: a text query (`q`) searches active memories only, so `q` with another status is a 422;
    a memory's end (`valid_to`) must come after its start (`valid_from`)."""
    body = case.body if isinstance(case.body, dict) else {}
    ended = (
        body.get("valid_from") and body.get("valid_to") and not body.get("agent_id")
    )  # no agent: 404 first
    if case.operation.label == "POST /v1/memories" and ended:
        start, end = (
            datetime.fromisoformat(body[k].replace("Z", "+00:00")) for k in ("valid_from", "valid_to")
        )
        if end <= start:
            return "valid_to must be after valid_from"
    query = case.query or {}
    if case.operation.label != "GET /v1/memories" or "q" not in query or "status" not in query:
        return None
    statuses = query["status"] if isinstance(query["status"], list) else [query["status"]]
    # no status at all (an empty list) is the default, active
    return "q searches active memories only" if set(statuses) - {"active"} else None


def _modes(operation) -> tuple[GenerationMode, ...]:
    """Positive, and negative unless nothing can be invalid: no body and only free-form path ids
    (hypothesis would spend seconds proving that no invalid case exists)."""
    raw = operation.definition.raw
    free = all(
        p.get("in") == "path" and p.get("schema") == {"type": "string", "title": p["schema"].get("title")}
        for p in raw.get("parameters", [])
    )
    if free and "requestBody" not in raw:
        return (GenerationMode.POSITIVE,)
    return (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


def _fuzz(operation, mode: GenerationMode, key: str, sent: list[str]) -> str | None:
    """The first failure of up to EXAMPLES cases of one operation in one mode, as text."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=not LONG,
        database=None,
        phases=(Phase.generate,),  # no shrinking: the first failure is reported as it came
    )
    def run(case) -> None:
        sent.append(operation.label)
        refused = _refused_combination(case) if mode is GenerationMode.POSITIVE else None
        reply = case.call_and_validate(
            headers={"Authorization": f"Bearer {key}"},
            excluded_checks=[positive_data_acceptance] if refused else None,
            timeout=30,
        )
        if refused:
            if "agent_id" in case.query:  # the agent is looked up first: a made-up one is a 404
                assert reply.status_code == 404 and "no agent" in reply.text, reply.text
            else:
                assert reply.status_code == 422 and refused in reply.text, reply.text

    try:
        run()
    except Unsatisfiable:  # nothing to vary in this mode (no parameters, or none that can be invalid)
        return None
    except (Exception, FailureGroup) as failure:  # every kind of failure is collected and reported
        return f"{operation.label} ({mode.value}): {failure}"
    return None


def test_every_operation_answers_as_its_schema_says(server, scripted_llm):
    scripted_llm.default_reply = "Noted."  # the chat proxy's upstream answers whatever it is sent
    schema = schemathesis.openapi.from_url(f"{server.base_url}/openapi.json")
    schema.config.update(base_url=server.base_url)
    # every case is sent with a real key (below): the bearer scheme the schema declares is not
    # one of the parameters to vary
    schema.config.generation.update(with_security_parameters=False)
    operations = [result.ok() for result in schema.get_all_operations()]
    sent: list[str] = []
    failures = []
    for operation in operations:
        key = ADMIN_KEY if operation.path.startswith("/v1/admin") else server.token
        for mode in _modes(operation):
            if (failure := _fuzz(operation, mode, key, sent)) is not None:
                failures.append(failure)
    print(f"\nfuzz: {len(operations)} operations, {len(sent)} cases, {len(failures)} failing")
    assert len(operations) >= 30 and set(sent) == {op.label for op in operations}
    assert not failures, "\n\n".join(failures)


def test_text_with_a_nul_character_is_refused_alike_on_both_backends(client):
    """What the fuzz found: PostgreSQL cannot store U+0000 in text, so a turn holding one was a 500
    there while SQLite took it. Now both refuse it with a 422 that names the field, and store
    nothing. (A memory's own text is cleaned instead: the writer turns U+0000 into a space.)"""
    add = client.post("/v1/memories", json={"text": "I live in\x00Porto"})
    assert add.status_code == 201 and add.json()["text"] == "I live in Porto"
    refused = [
        ("/v1/turns", {"messages": [{"role": "user", "content": "I live in\x00 Lisbon"}]}, "content"),
        ("/v1/turns", {"messages": [{"role": "user", "content": "Hi"}], "conversation_id": "c\x00"}, "conv"),
        ("/v1/agents", {"name": "diary\x00"}, "body.name"),
        ("/v1/agents", {"name": "diary", "persona": "You\x00 are terse"}, "body.persona"),
    ]
    for path, body, where in refused:
        reply = client.post(path, json=body)
        assert reply.status_code == 422, (path, reply.text)
        assert where in reply.json()["error"]["message"] and "U+0000" in reply.text, reply.text
    assert client.get("/v1/agents").json() == [] and client.get("/v1/jobs").json()["items"] == []
    # a search only reads: U+0000 in a query is harmless and answered
    assert client.get("/v1/memories", params={"q": "Porto\x00"}).status_code == 200
