"""What the host learns from the worker about every function of every example topology.

The host reads each function's bindings from the worker's ``FunctionMetadataResponse``
(``raw_bindings``, one JSON object per binding; ``retry_options``) and configures the trigger
listeners from them. The expected values are derived from the topology file, so a topology
change and a trigger registration that disagree fail here. Indexing must not connect to
anything: no connection settings are given.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from replication.topology import (
    CAPTURE_SUBSCRIPTION,
    NamespaceKind,
    capture_sources,
    load_topology,
    requires_session,
)
from tests.host.host import WorkerSession, worker

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = [
    *sorted((ROOT / "examples").glob("*.json")),
    Path(__file__).with_name("topology.json"),
]


def _seconds(duration: object) -> float:
    return float(getattr(duration, "seconds", 0)) + getattr(duration, "nanos", 0) / 1e9


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_every_task_is_one_batch_trigger_with_binary_bodies(path: Path, tmp_path: Path) -> None:
    topology = load_topology(path)
    settings = {"FUNCTIONS_WORKER_RUNTIME": "python", "REPLICATION_TOPOLOGY": str(path)}
    with worker(settings, tmp_path / "worker.log") as session:
        functions = session.functions
    captures = capture_sources(topology)
    assert sorted(functions) == sorted(
        [*(task.name for task in topology.tasks), *(capture.name for capture in captures)]
    )
    for capture in captures:  # a Service Bus capture: a batch trigger on its subscription
        (binding,) = functions[capture.name].bindings
        assert binding["type"] == "serviceBusTrigger"
        assert binding["direction"].lower() == "in"
        assert binding["cardinality"].lower() == "many"
        assert binding["dataType"].lower() == "binary"
        assert binding["connection"] == topology.namespace(capture.source.namespace).connection
        assert binding["topicName"] == capture.source.entity
        assert binding["subscriptionName"] == CAPTURE_SUBSCRIPTION
        assert functions[capture.name].retry is None
    for task in topology.tasks:
        function = functions[task.name]
        (binding,) = function.bindings
        namespace = topology.namespace(task.source.namespace)
        assert binding["name"] == "messages"
        assert binding["direction"].lower() == "in"
        assert binding["cardinality"].lower() == "many"
        assert binding["dataType"].lower() == "binary"
        assert binding["connection"] == namespace.connection
        dead_letter = "/$DeadLetterQueue" if task.source.dead_letter_queue else ""
        if namespace.kind is NamespaceKind.SERVICEBUS:
            # A session-enabled queue or subscription refuses non-session receivers.
            sessions = requires_session(topology, task.source)
            assert binding.get("isSessionsEnabled", False) is sessions, task.name
        if namespace.kind is NamespaceKind.EVENTHUBS:
            assert binding["type"] == "eventHubTrigger"
            assert binding["eventHubName"] == task.source.entity
            assert binding["consumerGroup"] == task.source.consumer_group
            retry = function.retry
            assert retry is not None, "Event Hubs triggers need a retry policy"
            assert retry.max_retry_count == -1
            assert retry.retry_strategy == retry.RetryStrategy.Value("exponential_backoff")
            assert _seconds(retry.minimum_interval) == timedelta(seconds=5).total_seconds()
            assert _seconds(retry.maximum_interval) == timedelta(minutes=5).total_seconds()
            assert "isSessionsEnabled" not in binding
        elif task.source.subscription is not None:
            assert binding["type"] == "serviceBusTrigger"
            assert binding["topicName"] == task.source.entity
            assert binding["subscriptionName"] == task.source.subscription + dead_letter
            assert "queueName" not in binding
            # Service Bus triggers rely on redelivery; a runtime retry policy does not apply.
            assert function.retry is None
        else:
            assert binding["type"] == "serviceBusTrigger"
            assert binding["queueName"] == task.source.entity + dead_letter
            assert function.retry is None


def test_worker_capabilities_are_what_the_host_conversion_assumes(
    worker: WorkerSession,
) -> None:
    """The fixtures drop empty strings because the worker does not ask for them."""
    assert worker.capabilities.get("TypedDataCollection")
    assert "IncludeEmptyEntriesInMessagePayload" not in worker.capabilities
