"""The tests' own `mnemo serve` process (tests/server/processes.py): a port that another server
takes between its choice and the start is chosen again, and that server's answer never counts."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from tests.server import processes
from tests.server.processes import Serve, environment

pytestmark = pytest.mark.slow  # starts `mnemo serve` twice


class _AnswersEverything(BaseHTTPRequestHandler):
    """Another server on the port: 200 to every GET, /healthz included."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        """Nothing: a request to it is expected, not news."""


def test_a_port_another_server_takes_first_is_chosen_again(tmp_path, scripted_llm, monkeypatch):
    with ThreadingHTTPServer(("127.0.0.1", 0), _AnswersEverything) as other:
        threading.Thread(target=other.serve_forever, daemon=True).start()
        taken = other.server_address[1]
        assert httpx2.get(f"http://127.0.0.1:{taken}/healthz").status_code == 200
        choices, free_port = iter([taken]), processes.free_port
        monkeypatch.setattr(processes, "free_port", lambda: next(choices, None) or free_port())
        served = Serve(environment(tmp_path / "data", scripted_llm), tmp_path / "serve.log")
        try:
            assert served.port != taken
            assert "address already in use" in served.log.read_text()
            # the key the first start printed, before it found the port taken
            me = httpx2.get(f"{served.base_url}/v1/me", headers={"Authorization": f"Bearer {served.token}"})
            assert me.status_code == 200, me.text
        finally:
            served.stop()
            other.shutdown()
