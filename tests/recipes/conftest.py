"""Fixtures of the recipe tests: the HTTP ones reuse tests/server's live server on loopback."""

from __future__ import annotations

from tests.server.conftest import admin, client, processes, server, server_settings  # noqa: F401
