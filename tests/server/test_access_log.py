"""No access log line holds what a person typed: a query string's values are dropped, on every
face that takes one (the erasure search, the page's erasure search and its redirect, search)."""

from __future__ import annotations

import logging

import pytest

from mnemo.http.access_log import without_values

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


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/v1/memories", "/v1/memories"),
        ("/v1/memories?", "/v1/memories?…"),
        ("/x?q=secret&q=again&page=2", "/x?…"),
        ("/x?Zebulon", "/x?…"),  # a name may be typed text too
        ("/x?q=%E2%98%83&%ZZ=bad?more", "/x?…"),
    ],
)
def test_a_paths_query_string_is_dropped(path, logged):
    assert without_values(path) == logged
