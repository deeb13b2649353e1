"""What every CLI test shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MNEMO_* setting of the machine running the tests leaks in."""
    for key in list(os.environ):
        if key.startswith("MNEMO_"):
            monkeypatch.delenv(key)


@pytest.fixture
def fresh_mnemo(tmp_path: Path, database_url: str | None):
    """The CLI on this test's backend over a data dir of its own and, on PostgreSQL, an empty
    database (nothing another test left)."""
    from tests.cli.test_cli import invoker
    from tests.sensitive_cases import start_clean

    if database_url:
        start_clean(database_url)
    return invoker(tmp_path / "data", database_url)
