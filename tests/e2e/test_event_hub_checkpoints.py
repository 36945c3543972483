"""A restarted local host resumes Event Hubs sources from their checkpoints in Azurite.

The stream-to-queue task of ``examples/active-passive-and-stream.json`` reads the ``devices``
hub (4 partitions) and writes to a Service Bus queue. The first run replicates five events;
after a restart only the three events sent in between may be replicated, none of the first
five again.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.storage.blob import ContainerClient

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

import emulator
from replication.drill import AZURITE_ACCOUNT, AZURITE_KEY
from replication.exceptions import ConfigurationError
from replication.hosts.local import LocalHost
from replication.operations import read_status
from replication.render.emulator_config import emulator_config
from replication.settings import Settings
from replication.topology import Topology, load_topology
from replication.transport.consumers import drain_servicebus
from replication.transport.eventhubs import DEFAULT_CONTAINER, STORAGE_SETTING, checkpoint_store

pytestmark = pytest.mark.emulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "active-passive-and-stream.json"
TASK = "devices-to-queue"


@pytest.fixture
def topology() -> Topology:
    return load_topology(EXAMPLE)


@pytest.fixture
def settings(topology: Topology, azurite: str) -> Iterator[dict[str, str]]:
    with emulator.run_emulator(emulator_config(topology)) as running:
        yield {**running.app_settings(topology), STORAGE_SETTING: azurite}


def _send(settings: dict[str, str], ids: range) -> None:
    with EventHubProducerClient.from_connection_string(
        settings["EH_INGEST"], eventhub_name="devices"
    ) as producer:
        for index in ids:
            batch = producer.create_batch(partition_key=f"device-{index}")
            event = EventData(json.dumps({"n": index}))
            event.properties = {"n": index}
            batch.add(event)
            producer.send_batch(batch)


def _settings(topology: Topology, environ: dict[str, Any]) -> Settings:
    return Settings.from_environ(environ, connections=topology.connections)


def _replicate(topology: Topology, settings: dict[str, str], expected: int) -> int:
    with LocalHost(topology, settings) as host:
        assert host.wait_until_idle(idle_seconds=3, timeout=120, at_least=expected)
    messages: int = host.stats[TASK].messages
    return messages


def test_restart_resumes_from_checkpoints(topology: Topology, settings: dict[str, Any]) -> None:
    _send(settings, range(5))
    assert _replicate(topology, settings, expected=5) == 5
    _send(settings, range(5, 8))
    assert _replicate(topology, settings, expected=3) == 3

    standby = topology.namespace("standby")
    received = drain_servicebus(standby, "device-events", settings=_settings(topology, settings))
    assert sorted(json.loads(e.body)["n"] for e in received) == list(range(8))
    container = ContainerClient.from_connection_string(
        settings[STORAGE_SETTING], DEFAULT_CONTAINER, api_version="2019-07-07"
    )
    with container:
        checkpoints = [b.name for b in container.list_blobs() if "/checkpoint/" in b.name]
    assert len(checkpoints) >= 1
    assert all("/devices/replication/checkpoint/" in name for name in checkpoints)


def test_unreachable_checkpoint_storage_is_a_clear_error_at_start() -> None:
    """Nothing listens on the port: the start fails at once, naming the setting."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = {
        STORAGE_SETTING: (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
        )
    }
    with pytest.raises(ConfigurationError, match="AzureWebJobsStorage: cannot create or reach"):
        checkpoint_store(Settings.from_environ(settings))


def test_status_reports_each_partition_against_its_checkpoint(
    topology: Topology, settings: dict[str, Any]
) -> None:
    """``status`` (:func:`read_status`): per partition the last enqueued sequence number against
    the checkpoint; nothing behind after a run, three events behind after three more sends."""

    def behind() -> int:
        (task,) = [
            t for t in read_status(topology, _settings(topology, settings)).tasks if t.task == TASK
        ]
        assert task.error is None, task.error
        assert task.partitions is not None
        assert len(task.partitions) == 4
        # A partition without a checkpoint is behind by everything it holds (from -1).
        return sum(
            p.last_enqueued - (p.checkpoint if p.checkpoint is not None else -1)
            for p in task.partitions
        )

    _send(settings, range(100, 105))
    _replicate(topology, settings, expected=5)
    assert behind() == 0
    _send(settings, range(105, 108))
    assert behind() == 3
