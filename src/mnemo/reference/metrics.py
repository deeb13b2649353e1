"""The metrics page: the series a server's /metrics holds, read from a fresh mnemo.http.metrics
registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from ..http.metrics import Metrics
from .markdown import code, escape, table


def render(registry: CollectorRegistry | None = None) -> str:
    """The page for `registry` (a new Metrics' own when not given)."""
    rows = [
        [code(name), kind, ", ".join(map(code, labels)), escape(help_text)]
        for name, kind, labels, help_text in sorted(_declared(registry or Metrics().registry))
    ]
    return "\n\n".join(
        [
            "# Metrics",
            "The series of one server process, at `/metrics` in Prometheus' text format (who may read"
            " them: `MNEMO_METRICS_KEY` in [the settings](settings.md)). A counter's samples are"
            " `<name>_total`; a histogram's are `<name>_bucket` (one per upper bound, `le`),"
            " `<name>_sum` and `<name>_count`.",
            table(["Name", "Type", "Labels", "Meaning"], rows),
        ]
    )


def _declared(registry: CollectorRegistry) -> list[tuple[str, str, tuple[str, ...], str]]:
    """Each metric of `registry`: name, type, label names and help. prometheus-client lists the
    collectors and their label names only in private fields; a labelled metric's samples show
    its labels only once it has some."""
    found = []
    for collector in registry._collector_to_names:
        if not isinstance(collector, MetricWrapperBase):
            raise TypeError(f"{collector!r} is no metric this page knows how to describe")
        for metric in collector.describe():
            found.append((metric.name, metric.type, tuple(collector._labelnames), metric.documentation))
    return found
