"""The Service Bus capture task killed mid-batch (SIGKILL, several times) and restarted: what
the region's topic held equals what the capture holds, message by message. Nothing is lost;
a message is captured twice only when the replicator died between writing its batch and
completing it and the redelivered batch was grouped differently, and then both copies carry the
same sequence number and enqueue time (replication/capture, "Retries").

The replicator is the local host as a user starts it (``python -m replication run``) on a
topology whose namespace has a ``capture`` section: its capture task reads the topic's
``replication-capture`` subscription with the real SDK against the emulator and writes with
the library's capture writer into the folder ``REPLICATION_CAPTURE_STORAGE`` names (Azure Blob
Storage's store is one Put Blob per file, committed whole or not at all, and is tested against
Azurite in tests/e2e/test_capture_blobs.py; the folder store writes a temporary file and
renames it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from azure.storage.blob import ContainerClient

from replication.drill._processes import azurite_process
from replication.layout import child_environment
from replication.operations import read_status
from replication.settings import Settings
from replication.topology import CAPTURE_SUBSCRIPTION

from .harness import ROOT, Cluster, eventually, merged, originals, topology_document

MESSAGES = 400
CONTAINER = "captures"


def captured(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(folder.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def waiting(cluster: Cluster) -> tuple[str, str]:
    """What ``status`` says the capture has not written: (backlog, dead-lettered)."""
    settings = Settings.from_environ(cluster.environ, connections=cluster.topology.connections)
    (capture,) = read_status(cluster.topology, settings).captures
    assert capture.error is None, capture.error
    return str(capture.backlog), str(capture.dead_letters)


def capture_document() -> dict[str, Any]:
    """One namespace whose topic ``orders`` is captured into :data:`CONTAINER`; the capture
    subscription is declared to choose short locks (a killed replicator's batch comes back
    after 5 s)."""
    document = topology_document(["weu"], [])
    namespace = document["namespaces"][0]
    namespace["capture"] = {"storageAccount": "stcaptures", "container": CONTAINER}
    namespace["topics"][0]["subscriptions"].append(
        {"name": CAPTURE_SUBSCRIPTION, "lockDuration": "PT5S", "maxDeliveryCount": 40}
    )
    return document


def replicator(
    cluster: Cluster, storage: str, log: Path, *until_idle: str
) -> subprocess.Popen[bytes]:
    """The local host writing captures where ``storage`` says (a folder, a connection string),
    logging at DEBUG: the capture's "copies in" line is written after a batch's files are
    durable and before the batch is completed."""
    settings = {"REPLICATION_CAPTURE_STORAGE": storage}
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "replication", "run", "--topology",
             str(cluster.topology_path), "-v", *until_idle],
            cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
            env=merged(os.environ, child_environment(), cluster.environ, settings),
        )  # fmt: skip


def test_a_capture_task_killed_mid_batch_loses_nothing_and_duplicates_only_as_documented(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    document = capture_document()
    root, log = tmp_path / "capture", tmp_path / "replicator.log"
    folder = root / CONTAINER
    with Cluster(document, tmp_path) as cluster:
        cluster.publish("weu", "orders", originals("m", MESSAGES, size=256))
        # What the capture subscription holds (peeked: nothing locked or settled), each copy
        # with the sequence number and enqueue time the capture will receive.
        held = {m.message_id: m for m in cluster.peek("weu", "orders", CAPTURE_SUBSCRIPTION)}
        assert len(held) == MESSAGES
        assert waiting(cluster) == (f"{MESSAGES}", "0")  # as `replication status` reports it
        for kills in range(3):
            running = replicator(cluster, str(root), log)
            target = len(captured(folder)) + 60

            def between_write_and_complete(target: int = target) -> bool:
                # Aim at the widest gap: a batch written whose completions are under way.
                lines = log.read_text().splitlines()
                return len(captured(folder)) >= target and bool(lines) and "copies in" in lines[-1]

            eventually(
                between_write_and_complete,
                timeout=90,
                interval=0.01,
                what=f"a batch written before kill {kills + 1}",
            )
            running.send_signal(signal.SIGKILL)
            running.wait(timeout=10)
        last = replicator(cluster, str(root), log, "--until-idle", "8", "--timeout", "180")
        assert last.wait(timeout=240) == 0, log.read_text()[-3000:]
        assert waiting(cluster) == ("0", "0")
        left = cluster.peek("weu", "orders", CAPTURE_SUBSCRIPTION)
        dead = cluster.peek("weu", "orders", CAPTURE_SUBSCRIPTION, dead_letter=True)
    assert (left, dead) == ([], [])
    records = captured(folder)
    copies = Counter(record["message_id"] for record in records)
    assert set(copies) == set(held)  # nothing lost
    for record in records:  # each copy is the message the region held
        message = held[record["message_id"]]
        assert record["sequence_number"] == message.sequence_number
        assert record["enqueued_time_utc"].startswith(
            message.enqueued_time_utc.strftime("%Y-%m-%dT%H:%M:%S")
        )
    figures[
        f"capture task (local host) SIGKILLed 3 times ({MESSAGES} messages): captured twice"
    ] = sum(copies.values()) - MESSAGES


def blob_records(connection: str) -> list[dict[str, Any]]:
    """Every record of the capture container's blobs."""
    with ContainerClient.from_connection_string(connection, CONTAINER) as container:
        if not container.exists():
            return []
        return [
            json.loads(line)
            for blob in container.list_blobs()
            for line in container.download_blob(blob.name).readall().decode().splitlines()
        ]


def test_a_capture_rides_out_a_hung_storage_and_loses_nothing(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    """Azurite frozen (SIGSTOP: connections accepted, nothing answered) while the capture task
    has a batch to write: the batch waits with its locks renewed and nothing of it is
    completed; thawed, every message the topic held is captured in Azure Blob Storage's format,
    none dead-lettered, and ``status`` shows nothing waiting."""
    log = tmp_path / "replicator.log"
    with (
        azurite_process(tmp_path) as storage,
        Cluster(capture_document(), tmp_path) as cluster,
    ):
        cluster.publish("weu", "orders", originals("before", 100, size=256))
        running = replicator(cluster, storage.connection_string, log)
        try:
            eventually(
                lambda: len(blob_records(storage.connection_string)) >= 100,
                timeout=90,
                what="the first messages captured",
            )
            storage.freeze()
            try:
                cluster.publish("weu", "orders", originals("during", 100, size=256))
                time.sleep(12)  # more than two lock durations of the capture subscription
                unwritten = waiting(cluster)
            finally:
                storage.thaw()
            thawed = time.monotonic()
            eventually(
                lambda: waiting(cluster) == ("0", "0"), timeout=120, what="everything captured"
            )
            caught_up = time.monotonic() - thawed
            assert running.poll() is None, log.read_text()[-3000:]
        finally:
            running.terminate()
            running.wait(timeout=30)
        records = blob_records(storage.connection_string)
    assert unwritten == ("100", "0")  # held back, not completed, not dead-lettered
    copies = Counter(record["message_id"] for record in records)
    expected = {f"before-{n}" for n in range(100)} | {f"during-{n}" for n in range(100)}
    assert set(copies) == expected  # nothing lost
    figures["capture with the storage frozen 12 s (100 messages waiting)"] = (
        f"caught up {caught_up:.1f} s after the thaw, {sum(copies.values()) - 200} captured twice"
    )
