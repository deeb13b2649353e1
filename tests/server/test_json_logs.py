"""`--json` on the long-running commands: `mnemo serve` logs one JSON object a line (uvicorn's
lines, the access log, mnemo's own) and prints its first key as one; `mnemo worker` says what
it did as JSON; `mnemo mcp` keeps stdout for the protocol and logs JSON to stderr."""

from __future__ import annotations

import json
import subprocess

import httpx2
import pytest

from tests.helpers import extraction
from tests.server.processes import MNEMO, Serve, environment, wait_until

pytestmark = pytest.mark.slow  # starts `mnemo serve` and `mnemo worker` as processes

SAID = "I keep a sourdough starter called Bubbles"


def _lines(text: str) -> list[dict]:
    """Every line of `text` as JSON (a line that is not fails the test, with the line)."""
    found = []
    for line in text.splitlines():
        if line.strip():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                raise AssertionError(f"not a JSON line: {line!r}") from None
    return found


def test_serve_logs_json_lines_and_none_holds_what_was_said(tmp_path, scripted_llm, database_url):
    env = environment(tmp_path, scripted_llm, database_url)
    scripted_llm.reply_json(extraction(SAID))
    server = Serve(env, tmp_path / "serve.log", command=(MNEMO, "serve", "--json"))
    try:
        assert server.token, server.log.read_text()
        headers = {"Authorization": f"Bearer {server.token}"}
        with httpx2.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
            body = {
                "messages": [{"role": "user", "content": SAID}, {"role": "assistant", "content": "Noted."}]
            }
            assert client.post("/v1/turns", json=body).status_code == 202
            wait_until(lambda: client.get("/v1/memories").json()["items"], what="the turn learnt")
            assert client.get("/v1/memories", params={"q": "sourdough"}).status_code == 200
    finally:
        server.stop()
    lines = _lines(server.log.read_text())
    [first] = [line for line in lines if "api_key" in line]
    assert first == {"created_user": "local", "api_key": server.token}
    logged = [line for line in lines if "api_key" not in line]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in logged), logged
    assert not any("color_message" in line or "\x1b" in line["message"] for line in logged)
    loggers = {line["logger"] for line in logged}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers, loggers
    assert any(name.startswith("mnemo") for name in loggers), loggers  # the turn's line, at least
    text = server.log.read_text()
    assert "sourdough" not in text and "Bubbles" not in text  # neither what was said nor searched


def test_the_worker_and_mcp_speak_json_when_asked(tmp_path, scripted_llm, database_url):
    env = environment(tmp_path, scripted_llm, database_url)
    run = [MNEMO, "worker", "--once", "--json"]
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"processed": 0}
    _lines(done.stderr)

    env["MNEMO_LOG_FORMAT"] = "json"  # the setting does what the flag does
    started = subprocess.run([MNEMO, "mcp"], env=env, input="", capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    assert started.stdout == ""  # stdout is the protocol's alone
    _lines(started.stderr)

    env["MNEMO_LOG_FORMAT"] = "yaml"
    refused = subprocess.run(
        [MNEMO, "worker", "--once"], env=env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2 and "log_format" in refused.stderr, refused.stderr
