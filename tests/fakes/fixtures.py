"""Pytest fixtures over the fakes; tests/conftest.py imports them by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import ScriptedOpenAI


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedOpenAI]:
    """A fresh scripted OpenAI-compatible server per test, stopped afterwards."""
    with ScriptedOpenAI() as server:
        yield server
