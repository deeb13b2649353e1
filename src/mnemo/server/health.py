"""/healthz (alive), /readyz (able to work) and /metrics (Prometheus).

/readyz answers 503 when the server cannot do its work: the database does not
answer, or no job worker is alive while this deployment needs one (by default,
when the server runs its own: MNEMO_WORKER; MNEMO_HEALTH__REQUIRE_WORKER says
otherwise). A chat model that cannot be reached leaves it "degraded" but ready:
recall, search and edits work without it, and turns wait in the queue. The body
is the same either way: each check's status and numbers, nobody's data.

/metrics needs MNEMO_METRICS_KEY (a key that reads the metrics and nothing else,
for Prometheus's `authorization` setting) or the admin key, as a bearer token.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from .. import keys
from ..auth import get_caller, require_admin
from ..health import Health
from ..http.metrics import CONTENT_TYPE, Metrics
from ..http.responses import errors
from ..settings import Settings

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Alive: answers as long as the process does (no database, no model asked)."""
    return {"status": "ok"}


def worker_required(settings: Settings) -> bool:
    required = settings.health.require_worker
    return settings.worker if required is None else required


@router.get("/readyz", responses={503: {"description": "Not ready: the same body says why."}})
async def readyz(request: Request) -> JSONResponse:
    """Ready: the database answers and a worker is alive where one is needed (200); else 503."""
    health: Health = request.app.state.health
    required = worker_required(request.app.state.settings)
    database, workers, model = await asyncio.gather(health.database(), health.workers(), health.model())
    checks: dict[str, dict[str, Any]] = {
        "database": database.body(),
        "workers": {**workers.body(), "required": required},
        "model": model.body(),
    }
    ready = database.status == "ok" and (workers.status == "ok" or not required)
    degraded = workers.status != "ok" or model.status not in ("ok", "not_configured")
    status = "not_ready" if not ready else "degraded" if degraded else "ready"
    return JSONResponse({"status": status, "checks": checks}, status_code=200 if ready else 503)


async def _may_read_metrics(request: Request) -> None:
    """The metrics key, or else the admin key (401 without a key, 403 for a user's)."""
    metrics_key = request.app.state.settings.metrics_key
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if metrics_key and scheme.lower() == "bearer" and keys.same_secret(token.strip(), metrics_key):
        return
    await require_admin(await get_caller(request))


@router.get(
    "/metrics", dependencies=[Depends(_may_read_metrics)], response_class=Response, responses=errors()
)
async def metrics(request: Request) -> Response:
    """The Prometheus text format: requests, recall, embedding, jobs, failed authentications."""
    found: Metrics = request.app.state.metrics
    health: Health = request.app.state.health
    return Response(found.exposition(await health.jobs()), media_type=CONTENT_TYPE)
