"""Unknown MNEMO_* variables and TOML keys are refused by name, with the nearest setting; and a
chat model named without a base URL is OpenAI's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mnemo.build import build_chat
from mnemo.providers.chat import OpenAIChatModel
from mnemo.setting_names import unknown_settings
from mnemo.settings import OPENAI_BASE_URL, Settings, UnknownSettings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("MNEMO_"):
            monkeypatch.delenv(key)


def named(environ: dict[str, str], toml: dict | None = None) -> list[tuple[str, str | None]]:
    return [(u.name, u.nearest) for u in unknown_settings(Settings, environ, toml)]


def test_every_setting_is_known_in_the_environment_whatever_its_case():
    environ = {
        "MNEMO_LLM_MODEL": "m",
        "mnemo_data_dir": "/tmp/x",
        "MNEMO_RECALL__MAX_FACTS": "3",
        "MNEMO_RECALL": '{"max_facts": 3}',
        "MNEMO_Health__Require_Worker": "false",
        "MNEMO_AUTH_LIMIT__FAILURES": "0",
        # the keys of a dict setting are the person's own
        "MNEMO_RECALL__WEIGHTS__semantic": "2",
        # read by the test suite, not as settings
        "MNEMO_LONG_TESTS": "1",
        "MNEMO_TEST_DATABASE_URL": "postgresql://x",
        "MNEMO_SKIP_CONTAINER_TESTS": "1",
        "MNEMO_CITUS_SOURCE": "/src/citus",
        "MNEMO_URL": "http://127.0.0.1:8420",  # the HTTP client's, beside a server's settings
        "MNEMO_API_KEY": "mnemo_x",
        "PATH": "/bin",
        "NOT_MNEMO_X": "1",
    }

    assert named(environ) == []


def test_a_misspelt_variable_is_named_with_the_nearest_setting():
    environ = {
        "MNEMO_LLM_MODLE": "gpt",
        "MNEMO_RECALL__MAX_FACT": "3",
        "MNEMO_RECAL__MAX_FACTS": "3",
        "MNEMO_LLM_MODEL__X": "3",  # a plain setting has no parts
        "MNEMO_": "",
        "MNEMO_ZZZZZZZZZZZZZZZZZZZZZZZZ": "1",
        "MNEMO_ÜBER": "1",
    }

    assert named(environ) == [
        ("MNEMO_", "MNEMO_USER"),
        ("MNEMO_LLM_MODEL__X", "MNEMO_LLM_MODEL"),
        ("MNEMO_LLM_MODLE", "MNEMO_LLM_MODEL"),
        ("MNEMO_RECALL__MAX_FACT", "MNEMO_RECALL__MAX_FACTS"),
        ("MNEMO_RECAL__MAX_FACTS", "MNEMO_RECALL__MAX_FACTS"),
        ("MNEMO_ZZZZZZZZZZZZZZZZZZZZZZZZ", None),
        ("MNEMO_ÜBER", "MNEMO_USER"),
    ]


def test_toml_keys_are_checked_at_every_level():
    toml = {
        "LLM_MODEL": "top-level keys match whatever their case",
        "llm_modle": "m",
        "recall": {"max_facts": 3, "max_fact": 3, "weights": {"anything": 1.0}},
        "Recall": {"Max_Facts": 3},  # inside a table, only as written
        "nope": {"a": 1},
    }

    assert named({}, toml) == [
        ("llm_modle", "llm_model"),
        ("recall.max_fact", "recall.max_facts"),
        ("Recall.Max_Facts", "recall.max_facts"),
        ("nope", None),
    ]


def test_load_refuses_unknown_names_and_says_which(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "mnemo.toml"
    config.write_text('llm_model = "m"\n[write]\nexchange = 3\n')
    monkeypatch.setenv("MNEMO_LLM_MODLE", "gpt-4o-mini")

    with pytest.raises(UnknownSettings) as raised:
        Settings.load(config, data_dir=tmp_path)

    assert [str(u) for u in raised.value.unknown] == [
        "MNEMO_LLM_MODLE (environment) is not a setting; did you mean MNEMO_LLM_MODEL?",
        f"write.exchange ({config}) is not a setting; did you mean write.exchanges?",
    ]
    # not strict: loaded all the same (mnemo doctor reports them its own way)
    assert Settings.load(config, strict=False, data_dir=tmp_path).llm_model == "m"


def test_a_model_without_a_base_url_is_openais(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MNEMO_LLM_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("MNEMO_LLM_API_KEY", "sk-test")

    settings = Settings.load()
    chat = build_chat(settings)

    assert settings.llm_base_url == OPENAI_BASE_URL == "https://api.openai.com/v1"
    assert settings.upstream_base_url == OPENAI_BASE_URL  # the chat proxy's too
    assert isinstance(chat, OpenAIChatModel)
    assert str(chat._client.base_url).rstrip("/") == OPENAI_BASE_URL
    assert chat._client.api_key == "sk-test"


def test_a_base_url_given_is_kept_and_no_model_means_no_chat(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MNEMO_LLM_MODEL", "llama3.2")
    monkeypatch.setenv("MNEMO_LLM_BASE_URL", "http://127.0.0.1:11434/v1")
    assert Settings.load().llm_base_url == "http://127.0.0.1:11434/v1"

    monkeypatch.delenv("MNEMO_LLM_MODEL")
    monkeypatch.delenv("MNEMO_LLM_BASE_URL")
    monkeypatch.setenv("MNEMO_LLM_API_KEY", "sk-test")
    assert Settings.load().llm_base_url is None
    assert build_chat(Settings.load()) is None
