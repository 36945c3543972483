"""A Service Bus capture through the real Python worker: what the region's topic held is in the
capture files once the function returned, and nothing is completed that was not written.

``topology.json`` gives the ``neu`` namespace a ``capture`` section, so the app has the function
``capture-neu-orders``, a batch trigger on the topic's ``replication-capture`` subscription.
Each test publishes to that topic, receives the subscription's messages locked as the Service
Bus extension does, builds the invocation the host would send
(:mod:`tests.host.host_conversion`), invokes the function through the worker runtime and settles
the batch as the extension does (completed when the function returned, abandoned when it
raised). The app writes into the folder ``REPLICATION_CAPTURE_STORAGE`` names (the blob store
over Azurite is tested in tests/e2e/test_capture_blobs.py).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from azure.servicebus import ServiceBusMessage, ServiceBusReceivedMessage

from replication.topology import CAPTURE_SUBSCRIPTION
from tests.host.brokers import deliver_locked_batch, drain, send
from tests.host.host import WorkerSession

FUNCTION = "capture-neu-orders"
CONTAINER = "captures"


def captured(folder: Path) -> dict[str, dict[str, Any]]:
    """Every record of the capture, by MessageId, with the file's folder as ``"folder"``
    (``{region}/{yyyy}/{MM}/{dd}/{HH}``)."""
    return {
        record["message_id"]: {**record, "folder": path.parent.relative_to(folder).as_posix()}
        for path in sorted(folder.rglob("*.jsonl"))
        for record in map(json.loads, path.read_text().splitlines())
    }


def clear(connection: str) -> None:
    """Empty the capture subscription: other tests' messages to ``neu/orders`` (replicas of
    the all-active task) wait there, and a test delivers only its own."""
    drain(connection, "orders", 0, subscription=CAPTURE_SUBSCRIPTION, quiet_seconds=0.5)


def deliver(
    worker: WorkerSession, connection: str, count: int
) -> tuple[Any, list[ServiceBusReceivedMessage]]:
    """One batch of ``count`` from the capture subscription through the function, settled as
    the extension settles it; the response and the messages as received."""
    return deliver_locked_batch(
        worker, FUNCTION, connection, "orders", count, subscription=CAPTURE_SUBSCRIPTION
    )


def test_a_batch_is_captured_as_the_region_held_it(
    worker: WorkerSession, emulator_settings: dict[str, str], capture_folder: Path
) -> None:
    connection = emulator_settings["SB_NEU"]
    clear(connection)
    ids = [f"cap-{uuid.uuid4().hex[:12]}" for _ in range(20)]
    send(
        connection,
        "orders",
        [ServiceBusMessage(f"body {n}".encode(), message_id=i, subject="order") for n, i in
         enumerate(ids)],
    )  # fmt: skip
    response, received = deliver(worker, connection, len(ids))
    assert worker.succeeded(response), response.result.exception.message
    records = captured(capture_folder / CONTAINER)
    for message in received:
        record = records[str(message.message_id)]
        assert message.enqueued_time_utc is not None
        assert record["folder"] == f"neu/{message.enqueued_time_utc:%Y/%m/%d/%H}"
        assert record["sequence_number"] == message.sequence_number
        assert record["enqueued_time_utc"].startswith(
            message.enqueued_time_utc.strftime("%Y-%m-%dT%H:%M:%S")
        )
    assert set(ids) <= set(records)
    drain(connection, "orders", len(ids), subscription="audit", quiet_seconds=0.5)


def test_a_batch_the_store_refuses_is_abandoned_and_captured_when_it_comes_back(
    worker: WorkerSession, emulator_settings: dict[str, str], capture_folder: Path
) -> None:
    """The container folder is a file: the write fails, the function raises, the batch is
    abandoned (nothing captured, nothing completed); delivered again once the store is back,
    it is captured whole."""
    connection = emulator_settings["SB_NEU"]
    container = capture_folder / CONTAINER
    clear(connection)
    ids = [f"refused-{uuid.uuid4().hex[:12]}" for _ in range(5)]
    send(connection, "orders", [ServiceBusMessage(b"x", message_id=i) for i in ids])
    kept = capture_folder / "kept"
    if container.exists():
        shutil.move(container, kept)
    container.write_text("not a folder")
    try:
        response, _ = deliver(worker, connection, len(ids))
    finally:
        container.unlink()
        if kept.exists():
            shutil.move(kept, container)
    assert not worker.succeeded(response)
    assert "not captured" in response.result.exception.message
    assert not set(ids) & set(captured(container))
    response, received = deliver(worker, connection, len(ids))  # the abandoned batch, again
    assert worker.succeeded(response), response.result.exception.message
    assert sorted(str(m.message_id) for m in received) == sorted(ids)
    assert set(ids) <= set(captured(container))
    drain(connection, "orders", len(ids), subscription="audit", quiet_seconds=0.5)
