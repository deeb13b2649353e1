"""`mnemo remember` with a chat model that fails: it says why, with the error's code, and exits 1."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mnemo.cli.main import app
from tests.fakes.openai_server import ScriptedOpenAI


def remember(data_dir: Path, scripted_llm: ScriptedOpenAI, *extra: str):
    env = {"COLUMNS": "200", "MNEMO_LLM_BASE_URL": scripted_llm.base_url, "MNEMO_LLM_MODEL": "scripted-model"}
    args = ["--data-dir", str(data_dir), "remember", "-u", "I moved to Porto last week", *extra]
    return CliRunner().invoke(app, args, env=env, catch_exceptions=False)


def test_a_model_that_refuses_is_a_model_error(tmp_path: Path, scripted_llm: ScriptedOpenAI) -> None:
    scripted_llm.fail(401, "invalid api key")
    refused = remember(tmp_path, scripted_llm)
    assert refused.exit_code == 1, refused.output  # the problem first, then the failure with its code
    last = refused.stderr.splitlines()[-1]
    assert last == "model_error: The model failed (refused_by_policy); nothing was learnt."
    scripted_llm.reply("I cannot help with that.")  # no JSON: an answer it cannot read
    unreadable = remember(tmp_path, scripted_llm, "--json")
    assert unreadable.exit_code == 1 and '"failure": "invalid_reply"' in unreadable.stdout


def test_a_model_out_of_reach_is_model_unavailable(tmp_path: Path, scripted_llm: ScriptedOpenAI) -> None:
    scripted_llm.fail(503, "overloaded", times=10)
    unavailable = remember(tmp_path, scripted_llm)
    assert unavailable.exit_code == 1, unavailable.output
    last = unavailable.stderr.splitlines()[-1]
    assert last.startswith("model_unavailable: The model was unavailable; nothing was learnt.")
