"""Running it: /readyz (the database, the workers' heartbeats, the chat model) and /metrics
(Prometheus), scraped from a real server after real requests."""

from __future__ import annotations

import asyncio
import re

import httpx2
import pytest

from mnemo.build import build_core
from mnemo.settings import HealthSettings, Settings
from tests.fakes.live_server import LiveServer
from tests.helpers import extraction
from tests.server.api import add, client_for, ok, submit, wait_for_job
from tests.server.conftest import ADMIN_KEY
from tests.server.processes import free_port, wait_until

pytestmark = pytest.mark.slow  # each test runs a real server

METRICS_KEY = "metrics-only-key-0123456789"


def running(settings: Settings, **changes) -> LiveServer:
    return LiveServer(settings.model_copy(update=changes))


def readyz(server) -> tuple[int, dict]:
    with httpx2.Client(base_url=server.base_url, timeout=30) as anonymous:
        reply = anonymous.get("/readyz")
    return reply.status_code, reply.json()


def scrape(server, key: str = ADMIN_KEY) -> str:
    with client_for(server, key) as c:
        reply = c.get("/metrics")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    return reply.text


def value(text: str, series: str) -> float:
    """The sample of `series` (name and labels exactly as exposed); 0 when it is not there."""
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def beat_from_another_process(settings: Settings) -> None:
    """A worker over the same database writes its heartbeat, as `mnemo worker` does."""

    async def go() -> None:
        core = await build_core(settings).open()
        try:
            await core.worker(name="elsewhere:1").beat()
        finally:
            await core.close()

    asyncio.run(go())


# -- /readyz ------------------------------------------------------------------------------


def test_ready_with_database_worker_and_model_and_the_model_is_asked_once_per_period(server, scripted_llm):
    models_asked = lambda: sum(r["path"] == "/v1/models" for r in scripted_llm.requests)  # noqa: E731
    code, body = wait_until(
        lambda: (r := readyz(server))[1]["checks"]["workers"]["alive"] and r, what="a beat"
    )
    assert code == 200 and body["status"] == "ready", body
    checks = body["checks"]
    assert checks["database"] == {"status": "ok"}
    assert checks["workers"]["status"] == "ok" and checks["workers"]["required"] is True
    assert checks["model"]["status"] == "ok"
    asked = models_asked()
    for _ in range(3):
        assert readyz(server)[0] == 200
    assert models_asked() == asked  # cached for model_check_seconds (60 s by default)
    with httpx2.Client(base_url=server.base_url) as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}


def test_a_deployment_whose_workers_run_elsewhere(server_settings):
    """Without its own worker the server is ready but degraded while no worker beats; once
    required (MNEMO_HEALTH__REQUIRE_WORKER), it is not ready until one does."""
    with running(server_settings, worker=False) as live:
        code, body = readyz(live)
        assert code == 200 and body["status"] == "degraded"
        assert body["checks"]["workers"] == {
            "status": "none",
            "alive": 0,
            "newest_heartbeat_seconds": None,
            "required": False,
        }
    required = server_settings.model_copy(
        update={"worker": False, "health": HealthSettings(require_worker=True)}
    )
    with LiveServer(required) as live:
        code, body = readyz(live)
        assert code == 503 and body["status"] == "not_ready"
        assert body["checks"]["database"] == {"status": "ok"} and body["checks"]["workers"]["alive"] == 0
        beat_from_another_process(required)
        code, body = readyz(live)
        assert code == 200 and body["checks"]["workers"]["alive"] == 1, body


def test_a_model_that_cannot_be_reached_degrades_but_does_not_unready(server_settings):
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    with running(server_settings, llm_base_url=nowhere) as live:
        wait_until(lambda: readyz(live)[1]["checks"]["workers"]["alive"], what="a beat")
        code, body = readyz(live)
        assert code == 200 and body["status"] == "degraded"
        assert body["checks"]["model"]["status"] == "unreachable"
        assert nowhere not in str(body) and "127.0.0.1" not in str(body)
    with running(server_settings, llm_base_url=None, llm_model=None) as live:
        wait_until(lambda: readyz(live)[1]["checks"]["workers"]["alive"], what="a beat")
        code, body = readyz(live)
        assert code == 200 and body["status"] == "ready"
        assert body["checks"]["model"] == {"status": "not_configured"}


def test_a_stopped_worker_takes_its_heartbeat_along(server_settings):
    with running(server_settings) as live:
        wait_until(lambda: readyz(live)[1]["checks"]["workers"]["alive"], what="a beat")
    with running(server_settings, worker=False) as live:
        assert readyz(live)[1]["checks"]["workers"]["alive"] == 0


# -- /metrics -----------------------------------------------------------------------------


def test_metrics_after_real_requests_name_routes_arms_jobs_and_failures_but_nobody(
    server, admin, scripted_llm
):
    person = ok(admin.post("/v1/admin/users", json={"name": "Zoë Quixotic"}), 201)
    secret_text = "I keep a blue kayak named Zanzibar"
    with client_for(server, person["key"]["token"]) as zoe:
        fact = add(zoe, secret_text)
        ok(zoe.get(f"/v1/memories/{fact['id']}"))
        ok(zoe.post("/v1/memories/search", json={"query": "what is my kayak called"}))
        scripted_llm.reply_json(extraction("I was born in Reykjavik"))
        job = submit(zoe, "I was born in Reykjavik")["job"]
        assert wait_for_job(zoe, job["id"])["status"] == "done"
        scripted_llm.fail(500, times=50)
        failing = submit(zoe, "I moved to Quito last spring")["job"]
    with client_for(server, person["key"]["token"][:-3] + "xyz") as wrong:
        assert wrong.get("/v1/me").status_code == 401
    with client_for(server, None) as none:
        assert none.get("/v1/me").status_code == 401
        assert none.get(f"/nothing/here/{person['user']['id']}").status_code == 404

    text = wait_until(
        lambda: (
            (t := scrape(server))
            and value(t, 'mnemo_job_failures_total{reason="model_unreachable"}') >= 1
            and t
        ),
        what="a failed attempt",
    )
    route = (
        'mnemo_http_request_duration_seconds_count{method="GET",route="/v1/memories/{fact_id}",status="200"}'
    )
    assert value(text, route) == 1
    assert value(
        text, 'mnemo_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}'
    )
    for arm in ("semantic", "lexical", "pinned", "recency"):
        assert value(text, f'mnemo_recall_arm_duration_seconds_count{{arm="{arm}"}}') >= 1, arm
    assert value(text, "mnemo_embedding_duration_seconds_count") >= 1
    assert value(text, 'mnemo_job_duration_seconds_count{outcome="done"}') >= 1
    assert value(text, 'mnemo_job_duration_seconds_count{outcome="retry"}') >= 1
    assert value(text, 'mnemo_jobs{state="done"}') >= 1
    assert value(text, 'mnemo_jobs{state="pending"}') + value(text, 'mnemo_jobs{state="claimed"}') >= 1
    assert value(text, 'mnemo_auth_failures_total{reason="refused"}') >= 1
    assert value(text, 'mnemo_auth_failures_total{reason="missing"}') >= 1

    seeded = [
        "Zoë",
        "Quixotic",
        person["user"]["id"],
        person["key"]["id"],
        person["key"]["token"],
        fact["id"],
        job["id"],
        failing["id"],
        "kayak",
        "Zanzibar",
        "Reykjavik",
        "Quito",
        "scripted failure",
        "local",
    ]
    for needle in seeded:
        assert needle.lower() not in text.lower(), needle


def test_metrics_need_the_metrics_key_or_the_admin_key(server_settings):
    with running(server_settings, metrics_key=METRICS_KEY) as live:
        assert "mnemo_http_request_duration_seconds" in scrape(live, METRICS_KEY)
        assert "mnemo_jobs" in scrape(live, ADMIN_KEY)
        with client_for(live, None) as anonymous:
            assert anonymous.get("/metrics").status_code == 401
        for key in (METRICS_KEY[:-1], METRICS_KEY + "x", "", "Basic x"):
            with client_for(live, key) as wrong:
                assert wrong.get("/metrics").status_code == 401, key
        with client_for(live, live.token) as user:
            assert user.get("/metrics").status_code == 403
        with client_for(live, METRICS_KEY) as reader:  # the metrics key opens nothing else
            assert reader.get("/v1/admin/users").status_code == 401
            assert reader.get("/v1/me").status_code == 401


def test_no_metrics_key_and_the_admin_key_alone_reads_them(server):
    assert "mnemo_auth_failures" in scrape(server, ADMIN_KEY)
    with client_for(server, server.token) as user:
        assert user.get("/metrics").status_code == 403
