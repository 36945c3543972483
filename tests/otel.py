"""An OpenTelemetry SDK that keeps metrics and spans in memory, for the telemetry tests.

Passed to :class:`replication.telemetry.TaskTelemetry` explicitly rather than installed as the
global provider: the global one can be set once per process, and would stamp trace context on
the replicas of every other test. Its TracerProvider records every span (``always_on``) unless
told otherwise, whatever ``OTEL_TRACES_SAMPLER`` says: the tests of trace chains check every
link of them (the applications' default samples, see ``replication/telemetry/_setup.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Sampler


class Sdk:
    """An SDK MeterProvider and TracerProvider that keep what they get, in memory."""

    def __init__(self, sampler: Sampler = ALWAYS_ON) -> None:
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])
        self.spans = InMemorySpanExporter()
        self.tracers = TracerProvider(sampler=sampler)
        self.tracers.add_span_processor(SimpleSpanProcessor(self.spans))

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]

    def messages(self) -> Counter[tuple[str, str, str]]:
        """``replication.messages`` by (outcome, target, reason)."""
        counts: Counter[tuple[str, str, str]] = Counter()
        for point in self.points("replication.messages"):
            a = point.attributes
            key = (
                a["replication.outcome"],
                a.get("replication.target", ""),
                a.get("replication.reason", ""),
            )
            counts[key] += point.value
        return counts

    def histogram(self, name: str, **attributes: str) -> Any:
        """The one data point of histogram ``name`` whose attributes include ``attributes``."""
        (point,) = [
            p
            for p in self.points(name)
            if all(p.attributes.get(k) == v for k, v in attributes.items())
        ]
        return point
