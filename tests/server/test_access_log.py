"""No access log line holds what a person typed: a query string's values are dropped, on every
face that takes one (the erasure search, the page's erasure search and its redirect, search),
and a path shows only its routes' words and ids (a conversation id a client chose, a path that
finds nothing, are hidden)."""

from __future__ import annotations

import logging

import pytest

from mnemo.http.access_log import name_routes, without_values

pytestmark = pytest.mark.slow  # a real server


@pytest.fixture
def access_lines():
    """What uvicorn's access logger writes from here on, as its handlers receive it."""
    logger = logging.getLogger("uvicorn.access")
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_query_values_never_reach_the_access_log(client, server, access_lines):
    subject = "Zebulon Quixote-Marsh"
    client.post("/v1/memories", json={"text": f"My neighbour is {subject}"})
    client.get("/v1/erasures/about", params={"q": subject})
    client.get("/v1/memories", params={"q": subject, "limit": 5})
    page = client.get("/erase/about", params={"q": subject}, follow_redirects=True)
    assert page.status_code < 500
    logged = "\n".join(access_lines)
    assert "/v1/erasures/about?…" in logged and "/v1/memories?…" in logged
    assert "/erase/about?…" in logged
    for piece in ("Zebulon", "Quixote", "Marsh", "Zebulon+Quixote"):
        assert piece not in logged


def test_typed_text_in_a_path_never_reaches_the_access_log(client, server, access_lines):
    typed = "my password is Hunter22x!"
    client.post("/v1/turns", json={"conversation_id": typed, "messages": [{"role": "user", "content": "hi"}]})
    client.get(f"/conversations/{typed}/erase")
    client.get("/v1/memories/I am pregnant")  # finds nothing: 404
    fact = client.post("/v1/memories", json={"text": "I like tea"}).json()
    client.get(f"/v1/memories/{fact['id']}/history")
    logged = "\n".join(access_lines)
    assert "/conversations/…/erase" in logged and "/v1/memories/…" in logged
    assert f"/v1/memories/{fact['id']}/history" in logged  # ids and the routes' words stay
    for piece in ("Hunter22x", "password", "pregnant", "Hunter22x%21", "pregnant%20"):
        assert piece not in logged


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/v1/memories", "/v1/memories"),
        ("/v1/memories?", "/v1/memories?…"),
        ("/v1/memories?q=secret&q=again&page=2", "/v1/memories?…"),
        ("/v1/memories?Zebulon", "/v1/memories?…"),  # a name may be typed text too
        ("/v1/memories?q=%E2%98%83&%ZZ=bad?more", "/v1/memories?…"),
        ("/v1/memories/I%20am%20pregnant/history", "/v1/memories/…/history"),
        (
            "/v1/memories/0190c8e2-7b1d-7c3e-9a4f-000000000a11",
            "/v1/memories/0190c8e2-7b1d-7c3e-9a4f-000000000a11",
        ),
        ("/Zebulon/v1", "/…/v1"),
        ("/", "/"),
    ],
)
def test_a_paths_query_string_and_typed_segments_are_dropped(path, logged):
    name_routes(["/v1/memories", "/v1/memories/{fact_id}/history"])
    assert without_values(path) == logged
