"""The heartbeat age as an OpenTelemetry metric: ``replication.heartbeat.age``.

An observable gauge (unit ``s``) with one observation per heartbeat path, attributes
``replication.origin`` (the namespace that published) and ``replication.target`` (the namespace
that received), read from a :class:`~replication.heartbeats.HeartbeatBook` whenever the
configured meter provider collects. Paths without a heartbeat yet are not observed (an age of
zero would read as healthy). Only ``opentelemetry-api`` is needed: without an SDK and exporter
configured by the host (Azure Monitor's distro, an OTLP exporter) the API's no-op provider makes
this free.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from replication.topology import Topology, heartbeat_paths

from ._messages import HeartbeatBook

METER_NAME = "replication.heartbeats"
GAUGE_NAME = "replication.heartbeat.age"
ORIGIN_ATTRIBUTE = "replication.origin"
TARGET_ATTRIBUTE = "replication.target"


def heartbeat_observations(book: HeartbeatBook) -> list[Observation]:
    """What the gauge reports now: one observation per path that had a heartbeat."""
    return [
        Observation(age, {ORIGIN_ATTRIBUTE: origin, TARGET_ATTRIBUTE: target})
        for (origin, target), age in book.ages().items()
        if age is not None
    ]


def observe_heartbeat_age(book: HeartbeatBook) -> None:
    """Register the gauge over ``book`` with the global meter provider."""

    def observe(_options: CallbackOptions) -> Iterable[Observation]:
        return heartbeat_observations(book)

    metrics.get_meter(METER_NAME).create_observable_gauge(
        GAUGE_NAME,
        callbacks=[observe],
        unit="s",
        description="Seconds since the latest heartbeat of the path was published at its origin",
    )


def watch_paths(book: HeartbeatBook, topology: Topology) -> bool:
    """Expect every heartbeat path of ``topology`` in ``book`` and report the book as the
    gauge: what each host does before it publishes or reads. False, and nothing done, when the
    topology has no heartbeat path (heartbeats off, or no namespace receives any)."""
    paths = heartbeat_paths(topology)
    if not paths:
        return False
    for path in paths:
        book.expect(path.origin, path.target)
    observe_heartbeat_age(book)
    return True


__all__ = [
    "GAUGE_NAME",
    "METER_NAME",
    "heartbeat_observations",
    "observe_heartbeat_age",
    "watch_paths",
]
