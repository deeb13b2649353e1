"""Forms no page of ours sends: refused with 400 and a page that says why, over plain HTTP.

Each is sent on one kept-alive connection, and the next request on that same
connection must still be answered: a refusal ends nothing but the request.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import pytest

from tests.web.test_try_it import proxied

pytestmark = pytest.mark.slow  # a browser against a real server

TOO_MANY = [(f"field{i}", "x") for i in range(1_001)]


@dataclass
class Reply:
    status: int
    text: str


class Connection:
    """One HTTP/1.1 connection to the server, kept alive from request to request."""

    def __init__(self, base_url: str) -> None:
        self.http = http.client.HTTPConnection(urlsplit(base_url).netloc, timeout=30)
        self.cookie = ""

    def send(self, method: str, path: str, fields: list[tuple[str, str]] | None = None) -> Reply:
        headers = {"Cookie": self.cookie} if self.cookie else {}
        body = None
        if fields is not None:
            body = urlencode(fields)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.http.request(method, path, body, headers)
        reply = self.http.getresponse()
        text = reply.read().decode()
        if found := re.search(r"mnemo_session=([^;]+)", reply.getheader("set-cookie") or ""):
            self.cookie = f"mnemo_session={found.group(1)}"
        assert not reply.will_close, f"{method} {path} closed the connection"
        return Reply(reply.status, text)

    def still_answers(self) -> bool:
        """Whether a next request goes over this very connection and is answered."""
        socket = self.http.sock
        answered = self.send("GET", "/healthz").status == 200
        return answered and socket is not None and self.http.sock is socket

    def csrf(self) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', self.send("GET", "/memories").text)
        assert found is not None
        return found.group(1)


@pytest.fixture
def connection(server) -> Iterator[Connection]:
    conn = Connection(server.base_url)
    yield conn
    conn.http.close()


@pytest.fixture
def signed_in(connection: Connection, server) -> Connection:
    assert connection.send("POST", "/signin", [("key", server.token)]).status == 303
    return connection


def refused(reply: Reply, why: str) -> None:
    assert reply.status == 400, reply.text
    assert "<h1>Form not accepted</h1>" in reply.text and why in reply.text


def test_form_with_too_many_fields_is_400(connection: Connection, server, api) -> None:
    # not signed in: the sign-in form itself
    refused(connection.send("POST", "/signin", [("key", server.token), *TOO_MANY]), "Too many fields")
    assert connection.still_answers()
    assert not connection.cookie

    # signed in: a form that would add a memory, with its token
    assert connection.send("POST", "/signin", [("key", server.token)]).status == 303
    token = connection.csrf()
    fields = [("csrf", token), ("text", "I sneak in"), *TOO_MANY]
    refused(connection.send("POST", "/memories", fields), "Too many fields")
    assert connection.still_answers()
    assert api.get("/v1/memories").json()["items"] == []


def test_try_it_deeply_nested_history_is_400(signed_in: Connection, llm) -> None:
    token = signed_in.csrf()
    for history in (
        "[" * 100_000,
        '[{"role": "assistant", "content": "Hi", "recalled": [{"id": {"a": [[["deeper"]]]}}]}]',
    ):
        fields = [("csrf", token), ("history", history), ("message", "Hello"), ("conversation", "")]
        refused(signed_in.send("POST", "/try", fields), "nested deeper")
        assert signed_in.still_answers()
    assert proxied(llm) == []

    fine = '[{"role": "user", "content": "Hi", "recalled": []}]'
    reply = signed_in.send("POST", "/try", [("csrf", token), ("history", fine), ("message", "Hello")])
    assert reply.status == 200 and len(proxied(llm)) == 1


def test_try_it_text_that_is_not_unicode_is_400(signed_in: Connection, llm) -> None:
    """A lone surrogate is valid JSON but no text: in the history sent back (a message's words,
    or what was recalled) it is refused, and nothing reaches the model."""
    token = signed_in.csrf()
    for history in (
        '[{"role": "user", "content": "hi \\ud800"}]',
        '[{"role": "assistant", "content": "x", "recalled": [{"id": "\\udc00"}]}]',
    ):
        fields = [("csrf", token), ("history", history), ("message", "Hello")]
        refused(signed_in.send("POST", "/try", fields), "not valid Unicode")
        assert signed_in.still_answers()
    assert proxied(llm) == []


def test_a_nul_in_a_form_field_is_left_out(signed_in: Connection, api) -> None:
    """No page sends U+0000 and PostgreSQL cannot store it: a form's fields drop it."""
    token = signed_in.csrf()
    reply = signed_in.send("POST", "/settings/agents", [("csrf", token), ("name", "ag\x00x")])
    assert reply.status == 303, reply.text
    assert [a["name"] for a in api.get("/v1/agents").json()] == ["agx"]


def test_an_unknown_gate_action_changes_nothing(signed_in: Connection, api) -> None:
    """No page sends these; each is refused with the reason in the flash, and the gate stays."""
    token = signed_in.csrf()
    before = api.get("/v1/me").json()["sensitive_gate"]
    for fields in ([("gate-card", "shred")], [("gate-cards", "allow")], [], [("gate-card", "")]):
        reply = signed_in.send("POST", "/settings/gate", [("csrf", token), *fields])
        assert reply.status == 303, reply.text
        assert api.get("/v1/me").json()["sensitive_gate"] == before
    reply = signed_in.send("POST", "/settings/gate", [("csrf", token), ("gate-card", "allow")])
    assert reply.status == 303 and api.get("/v1/me").json()["sensitive_gate"]["card"] == "allow"
