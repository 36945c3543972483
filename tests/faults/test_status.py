"""``python -m replication status`` against emulator nodes.

- The counts it prints are what was published, dead-lettered and parked; a heartbeat that
  reached a target shows its age; a namespace that is down makes it exit UNAVAILABLE after
  reporting the rest.
- With a replicator (``python -m replication run``) running, its figures and states follow what
  happens, for a Service Bus source and for an Event Hubs source (checkpoints in Azurite):
  replicating (backlog 0, fresh heartbeat, RPO 0), lagging (target namespace killed: the
  backlog builds and its oldest message ages), stalled (the replicator frozen with SIGSTOP: the
  heartbeat ages although both namespaces answer) and failing (a message the replicator
  parks), each read with ``status --json`` and checked figure by figure; a Service Bus
  backlog is checked by MessageId (``unreplicatedMessageIds``: what a failover then would
  lose). At the end every message published is on the target exactly once, and the poison
  message is parked, not replicated.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.servicebus import ServiceBusMessage

from replication.cli import main
from replication.drill import azurite
from replication.envelope import Envelope
from replication.exit_codes import ExitCode
from replication.heartbeats import heartbeat_now
from replication.operations import FiguresReader
from replication.planning import DeadLetter
from replication.properties import REPL_HOPS, REPL_PATH
from replication.runtime import parked_copy
from replication.settings import Settings
from replication.transport.eventhubs import STORAGE_SETTING
from replication.transport.servicebus import to_servicebus_message

from .harness import (
    Cluster,
    event_hubs_document,
    eventually,
    message_ids,
    originals,
    read_partition,
    replicator_process,
    topology_document,
)


def _line(output: str, task: str) -> str:
    return next(line for line in output.splitlines() if line.strip().startswith(f"{task} ("))


def test_status_counts_backlog_dead_letters_parked_and_heartbeats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu"), ("neu", "weu")])
    document["heartbeats"] = {"enabled": True, "interval": "PT1S"}
    with Cluster(document, tmp_path) as cluster:
        for name, value in cluster.environ.items():
            monkeypatch.setenv(name, value)
        cluster.publish("weu", "orders", originals("m", 7))
        with (
            cluster.client("weu") as client,
            client.get_subscription_receiver("orders", "to-neu") as receiver,
        ):
            received = receiver.receive_messages(max_message_count=2, max_wait_time=5)
            assert len(received) == 2
            for message in received:
                receiver.dead_letter_message(message, reason="test")
        source = "weu/orders/Subscriptions/to-neu"
        parked = [
            parked_copy(DeadLetter(Envelope(body=b"p", message_id=f"p-{n}"), "r", "d"), source)
            for n in range(3)
        ]
        other = parked_copy(DeadLetter(Envelope(body=b"o"), "r", "d"), "neu/orders")
        with cluster.client("weu") as client, client.get_queue_sender("replication-parked") as s:
            s.send_messages([to_servicebus_message(e) for e in [*parked, other]])
        with cluster.client("neu") as client, client.get_topic_sender("replication-heartbeat") as s:
            s.send_messages([to_servicebus_message(heartbeat_now("weu").envelope())])
            s.send_messages(ServiceBusMessage(b"not a heartbeat"))

        assert main(["status", "--topology", str(cluster.topology_path)]) == ExitCode.OK
        output = capsys.readouterr().out
        assert _line(output, "weu-to-neu").endswith("backlog 5, dead-lettered 2, parked 3"), output
        assert _line(output, "neu-to-weu").endswith("backlog 0, dead-lettered 0, parked 0")
        assert "heartbeat-weu-to-neu (weu/replication-heartbeat/" in output
        age = re.search(r"weu -> neu: age ([0-9.]+) s", output)
        assert age is not None, output
        assert float(age.group(1)) < 30
        assert "neu -> weu: none within 1200 s" in output

        assert main(["status", "--topology", str(cluster.topology_path), "--cap", "3"]) == 0
        capped = capsys.readouterr().out
        assert "backlog 3+, dead-lettered 2, parked 3" in _line(capped, "weu-to-neu")

        cluster.nodes["neu"].kill()
        code = main(["status", "--topology", str(cluster.topology_path)])
        output = capsys.readouterr().out
        assert code == ExitCode.UNAVAILABLE
        assert "UNREACHABLE" in _line(output, "neu-to-weu")
        assert _line(output, "weu-to-neu").endswith("backlog 5, dead-lettered 2, parked 3")


# Small thresholds, so that every state is reached in seconds: heartbeats every second, lagging
# past 2 s, stalled past 4 s without a heartbeat (the look-back is then 8 s).
MONITORING = {"lagThreshold": "PT2S", "heartbeatMaxAge": "PT4S"}
HEARTBEATS = {"enabled": True, "interval": "PT1S"}


class Status:
    """``python -m replication status --json`` as an operator runs it, against a cluster."""

    def __init__(self, cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
        self.cluster = cluster
        self.capsys = capsys

    def read(self) -> tuple[int, dict[str, Any]]:
        self.capsys.readouterr()
        code = main(["status", "--topology", str(self.cluster.topology_path), "--json"])
        return code, json.loads(self.capsys.readouterr().out)

    def task(self, name: str) -> tuple[int, dict[str, Any]]:
        code, report = self.read()
        (task,) = [t for t in report["tasks"] if t["task"] == name]
        return code, task

    def until(self, name: str, state: str, *, timeout: float = 120) -> dict[str, Any]:
        """The task's figures once it is in ``state`` (replicating and failing: and caught up,
        with a heartbeat: a young backlog is replicating too, and a message is parked before
        the replicator moves past it)."""
        if state in ("replicating", "failing"):
            self._caught_up(name, timeout)
        found: dict[str, Any] = {}

        def reached() -> bool:
            found.update(self.task(name)[1])
            if found["state"] != state:
                return False
            return state not in ("replicating", "failing") or (
                found["backlog"]["count"] == 0
                and all(beat["ageSeconds"] is not None for beat in found["heartbeats"])
            )

        eventually(reached, timeout=timeout, interval=0.5, what=f"{name} {state}")
        return found

    def _caught_up(self, name: str, timeout: float) -> None:
        """Until the task's backlog is 0, read alone with the reader ``status`` reads it with.
        A whole ``status`` read takes several seconds (an event hub task's about ten), and one
        begun before the replicator caught up shows the state before: waiting for this part
        first saves those reads; :meth:`until` still reads everything until it holds."""
        topology = self.cluster.topology
        reader = FiguresReader(topology, Settings.from_environ(connections=topology.connections))
        try:
            eventually(
                lambda: reader.backlog(name).count == 0,
                timeout=timeout,
                interval=0.5,
                what=f"{name} caught up",
            )
        finally:
            reader.close()


@contextlib.contextmanager
def paused(process: subprocess.Popen[bytes]) -> Iterator[None]:
    """The replicator frozen (SIGSTOP) for the block: it stops, and holds what it holds."""
    process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        process.send_signal(signal.SIGCONT)


def _assert_replicating(task: dict[str, Any], path: tuple[str, str]) -> None:
    assert task["backlog"] == {"count": 0, "atLeast": False}, task
    assert task["oldestUnreplicatedSeconds"] is None
    (beat,) = task["heartbeats"]
    assert (beat["origin"], beat["target"]) == path
    assert beat["error"] is None
    assert beat["ageSeconds"] is not None, beat
    assert beat["ageSeconds"] <= 4, beat
    assert task["rpo"] == {"messages": 0, "atLeast": False, "seconds": 0.0, "secondsAtLeast": False}
    assert task["reasons"] == []
    assert task["unreplicatedMessageIds"] in ([], None)  # None: an event hub (not named)


def _ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(count)]


def _assert_lagging(task: dict[str, Any], backlog: int, target: str) -> None:
    """The target namespace is down: the backlog builds and ages; the heartbeat cannot be read
    at the target, which is said, and the task is lagging, not stalled."""
    assert task["state"] == "lagging", task
    assert task["backlog"] == {"count": backlog, "atLeast": False}
    assert task["oldestUnreplicatedSeconds"] > 2
    assert task["reasons"][0].startswith("oldest unreplicated message ")
    assert task["reasons"][-1].startswith(f"target {target} unreachable")
    (beat,) = task["heartbeats"]
    assert beat["ageSeconds"] is None
    assert beat["error"]
    assert task["rpo"]["messages"] == backlog
    assert task["rpo"]["seconds"] == task["oldestUnreplicatedSeconds"]


def _assert_stalled(task: dict[str, Any], backlog: int, path: tuple[str, str]) -> None:
    """The replicator is frozen: both namespaces answer, the path's heartbeat is older than
    heartbeatMaxAge (or none is left within the look-back)."""
    assert task["state"] == "stalled", task
    (beat,) = task["heartbeats"]
    assert (beat["origin"], beat["target"]) == path
    assert beat["error"] is None
    assert beat["ageSeconds"] is None or beat["ageSeconds"] > 4, beat
    assert task["backlog"] == {"count": backlog, "atLeast": False}
    assert task["oldestUnreplicatedSeconds"] > 0
    assert task["rpo"]["messages"] == backlog
    assert task["reasons"][0].startswith(("heartbeat ", "no heartbeat "))


def _assert_failing(task: dict[str, Any], parked: int) -> None:
    """The replicator parked a message: not on the target, not retried; counted in the RPO."""
    assert task["state"] == "failing", task
    assert task["parked"] == {"count": parked, "atLeast": False}
    assert task["backlog"] == {"count": 0, "atLeast": False}
    assert task["rpo"]["messages"] == parked
    assert task["reasons"][0] == f"{parked} parked or dead-lettered (threshold 0)"


def test_status_follows_a_service_bus_task_through_every_state(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    figures: dict[str, object],
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    document["heartbeats"] = HEARTBEATS
    document["monitoring"] = MONITORING
    with Cluster(document, tmp_path) as cluster:
        for name, value in cluster.environ.items():
            monkeypatch.setenv(name, value)
        status = Status(cluster, capsys)
        with replicator_process(cluster, tmp_path / "replicator.log") as replicator:
            cluster.publish("weu", "orders", originals("a", 10))
            task = status.until("weu-to-neu", "replicating")
            _assert_replicating(task, ("weu", "neu"))
            assert cluster.count("neu", "orders", "audit") == 10

            cluster.nodes["neu"].kill()
            cluster.publish("weu", "orders", originals("b", 5))
            time.sleep(2.5)
            code, task = status.task("weu-to-neu")
            assert code == ExitCode.UNAVAILABLE
            _assert_lagging(task, 5, "neu")
            assert task["unreplicatedMessageIds"] == _ids("b", 5)
            figures["status, Service Bus, target down"] = task["rpo"]
            cluster.nodes["neu"].start()
            _assert_replicating(status.until("weu-to-neu", "replicating"), ("weu", "neu"))

            with paused(replicator):
                cluster.publish("weu", "orders", originals("c", 4))
                time.sleep(5)
                code, task = status.task("weu-to-neu")
                assert code == ExitCode.OK
                _assert_stalled(task, 4, ("weu", "neu"))
                assert task["unreplicatedMessageIds"] == _ids("c", 4)
                figures["status, Service Bus, replicator stopped"] = task["heartbeats"][0]
            _assert_replicating(status.until("weu-to-neu", "replicating"), ("weu", "neu"))

            poison = ServiceBusMessage(
                b"{}",
                message_id="poison",
                application_properties={REPL_HOPS: "many", REPL_PATH: "x"},
            )
            cluster.publish("weu", "orders", [poison])
            task = status.until("weu-to-neu", "failing")
            _assert_failing(task, 1)
            assert task["unreplicatedMessageIds"] == []
        # Message by message: nothing lost, nothing twice, the poison parked and not replicated.
        arrived = message_ids(cluster.peek("neu", "orders", "audit"))
        assert arrived == Counter(_ids("a", 10) + _ids("b", 5) + _ids("c", 4))
        assert message_ids(cluster.peek("weu", "replication-parked")) == Counter(["poison"])


EVENT_HUBS = {
    **event_hubs_document(partitions=2, consumer_group="replication"),
    "heartbeats": HEARTBEATS,
    "monitoring": MONITORING,
}


def _publish_events(cluster: Cluster, prefix: str, count: int, **properties: Any) -> None:
    connection = cluster.nodes["east"].connection_string
    with EventHubProducerClient.from_connection_string(
        connection, eventhub_name="telemetry"
    ) as producer:
        for partition in ("0", "1"):
            batch = producer.create_batch(partition_id=partition)
            for i in range(partition == "0", count, 2):  # partition 0 the odd, 1 the even
                event = EventData(b"{}")
                event.message_id = f"{prefix}-{i}"
                event.properties = dict(properties.items())
                batch.add(event)
            if len(batch):
                producer.send_batch(batch)


def test_status_follows_an_event_hubs_task_through_every_state(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    figures: dict[str, object],
) -> None:
    """The same states for an event hub source: its backlog is what follows the task's
    checkpoints in Azurite, its heartbeats cross a heartbeat event hub of each namespace."""
    with azurite(tmp_path) as storage, Cluster(EVENT_HUBS, tmp_path) as cluster:
        monkeypatch.setenv(STORAGE_SETTING, storage)
        for name, value in cluster.environ.items():
            monkeypatch.setenv(name, value)
        status = Status(cluster, capsys)
        with replicator_process(cluster, tmp_path / "replicator.log") as replicator:
            _publish_events(cluster, "a", 10)
            task = status.until("east-to-west", "replicating")
            _assert_replicating(task, ("east", "west"))
            assert {p["partition"]: p["unreplicated"] for p in task["partitions"]} == {
                "0": 0,
                "1": 0,
            }

            cluster.nodes["west"].kill()
            _publish_events(cluster, "b", 5)
            time.sleep(2.5)
            code, task = status.task("east-to-west")
            assert code == ExitCode.UNAVAILABLE
            _assert_lagging(task, 5, "west")
            assert task["unreplicatedMessageIds"] is None  # counted per partition, not named
            assert {p["partition"]: p["unreplicated"] for p in task["partitions"]} == {
                "0": 2,
                "1": 3,
            }
            assert task["oldestUnreplicatedAtLeast"] is False  # read at the checkpoint
            figures["status, Event Hubs, target down"] = task["rpo"]
            cluster.nodes["west"].start()
            _assert_replicating(status.until("east-to-west", "replicating"), ("east", "west"))

            with paused(replicator):
                _publish_events(cluster, "c", 4)
                time.sleep(5)
                code, task = status.task("east-to-west")
                assert code == ExitCode.OK
                _assert_stalled(task, 4, ("east", "west"))
                figures["status, Event Hubs, replicator stopped"] = task["heartbeats"][0]
            _assert_replicating(status.until("east-to-west", "replicating"), ("east", "west"))

            _publish_events(cluster, "poison", 1, **{REPL_HOPS: "many", REPL_PATH: "x"})
            task = status.until("east-to-west", "failing")
            _assert_failing(task, 1)
        # Event by event: nothing lost, nothing twice, the poison parked and not replicated.
        west = cluster.nodes["west"].connection_string
        arrived = _hub_message_ids(west, "telemetry", ("0", "1"))
        assert arrived == Counter(_ids("a", 10) + _ids("b", 5) + _ids("c", 4))
        assert message_ids(cluster.peek("ops", "replication-parked")) == Counter(["poison-0"])


def _hub_message_ids(connection: str, hub: str, partitions: tuple[str, ...]) -> Counter[str]:
    """The MessageIds of every event in the hub's partitions, read from the start until a
    partition stays idle for 2 s (independently of the code under test); the partitions side
    by side."""
    with ThreadPoolExecutor(len(partitions)) as pool:
        read = functools.partial(read_partition, connection, hub, idle=2)
        return message_ids([event for events in pool.map(read, partitions) for event in events])
