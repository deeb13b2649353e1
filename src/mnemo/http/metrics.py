"""The Prometheus series of one server process (prometheus-client), fed by mnemo.observe's calls
and by the timing of each request.

No label carries a user, a key, a name or any text: a route is its template (`/v1/memories/
{fact_id}`, never the path asked for), and every other label is one of a few fixed words. The
registry is the process's own (not the library's global one), so that each app counts apart.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..domain import JobStatus

__all__ = ["CONTENT_TYPE", "Metrics", "RequestTimer"]

UNMATCHED = "unmatched"  # a request no route answers: its path is the client's text, never a label
FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
SLOW = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Metrics:
    """An Observer (mnemo.observe) that counts into its own registry."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self._requests = Histogram(
            "mnemo_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template, method and status code.",
            ["route", "method", "status"],
            registry=registry,
            buckets=(*FAST, 5.0, 10.0, 30.0, 60.0),
        )
        self._arms = Histogram(
            "mnemo_recall_arm_duration_seconds",
            "Time one arm of a recall took.",
            ["arm"],
            registry=registry,
            buckets=FAST,
        )
        self._embedding = Histogram(
            "mnemo_embedding_duration_seconds",
            "Time one run of the embedding model took.",
            registry=registry,
            buckets=FAST,
        )
        self._jobs = Histogram(
            "mnemo_job_duration_seconds",
            "Time a worker held a job, by how it ended (done, retry, failed, released, lost).",
            ["outcome"],
            registry=registry,
            buckets=SLOW,
        )
        self._job_failures = Counter(
            "mnemo_job_failures",
            "Jobs that did not succeed, by reason category.",
            ["reason"],
            registry=registry,
        )
        self._auth_failures = Counter(
            "mnemo_auth_failures",
            "Requests refused for their key: wrong (refused), over the limit (limited), none (missing),"
            " of a disabled account (disabled).",
            ["reason"],
            registry=registry,
        )
        self._queue = Gauge(
            "mnemo_jobs", "Jobs in the queue by state, everyone's together.", ["state"], registry=registry
        )

    # -- mnemo.observe.Observer -----------------------------------------------------------

    def recall_arm(self, arm: str, seconds: float) -> None:
        self._arms.labels(arm).observe(seconds)

    def embedded(self, seconds: float) -> None:
        self._embedding.observe(seconds)

    def job_finished(self, outcome: str, seconds: float) -> None:
        self._jobs.labels(outcome).observe(seconds)

    def job_failed(self, reason: str) -> None:
        self._job_failures.labels(reason).inc()

    def auth_failed(self, reason: str) -> None:
        self._auth_failures.labels(reason).inc()

    # -- the rest ---------------------------------------------------------------------------

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        self._requests.labels(route, method, str(status)).observe(seconds)

    def exposition(self, jobs: Mapping[str, int]) -> bytes:
        """The text format, with the queue's counts as of now."""
        for state in JobStatus:
            self._queue.labels(str(state)).set(jobs.get(str(state), 0))
        return generate_latest(self.registry)


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestTimer:
    """ASGI middleware: the time of each HTTP request, by the template of the route that answered."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless the app answers

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.request(route, method, status, time.perf_counter() - started)
