"""One way to say a count, on every face."""

from __future__ import annotations

import pytest

from mnemo.wording import plural


@pytest.mark.parametrize(
    ("count", "one", "many", "said"),
    [
        (1, "memory", None, "1 memory"),
        (0, "memory", None, "0 memories"),
        (2, "conversation", None, "2 conversations"),
        (3, "queued turn", None, "3 queued turns"),
        (1, "API key", None, "1 API key"),
        (5, "API key", None, "5 API keys"),
        (2, "text is", "texts are", "2 texts are"),
        (1, "text is", "texts are", "1 text is"),
    ],
)
def test_a_count_and_its_words(count, one, many, said):
    assert plural(count, one, many) == said


def test_the_servers_log_takes_what_an_administrator_did():
    from mnemo.http.access_log import log_config

    admin = log_config()["loggers"]["mnemo.admin"]
    assert admin["level"] == "INFO" and admin["handlers"] == ["default"]
