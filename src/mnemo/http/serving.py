"""How mnemo runs under uvicorn: `mnemo serve`, the tests' live server and the benchmarks all
start it with these options, beyond the app and where it listens."""

from __future__ import annotations

from typing import Any

from ..settings import Settings
from .access_log import log_config
from .client_address import forwarded_header_options
from .timeouts import deadline_options


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The deadline on slow headers (timeouts.py), which proxies may name the client's
    address (client_address.py), and an access log without query values (access_log.py)."""
    return {
        **deadline_options(settings),
        **forwarded_header_options(settings),
        "log_config": log_config(settings.log_format == "json"),
    }
