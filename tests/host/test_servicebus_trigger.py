"""Service Bus batches through the real Python worker: replicas equal what was published.

The two Service Bus namespaces of ``topology.json`` are Premium (1 MB messages). Each test
publishes messages to the emulator, receives them locked as the Service Bus extension
does, builds the invocation the host would send (:mod:`tests.host.host_conversion`), invokes the
function through the worker runtime, settles the messages as the extension does, and reads the
replicas back with the SDK to compare them field by field with what was published.

Against the app as it was before this tier existed (commit 994ab12) all three fail: its triggers
declared no ``dataType``, so the host could not bind these bodies. With only the ``dataType``
added, the first and the last still fail (a message without PartitionKey or CorrelationId got
the next message's, read by position from a shortened array; replicas lost their TTL); the
second passes, because its metadata is exact. Run any checkout against this harness with
``REPLICATION_HOST_APP_DIR=/path/to/checkout``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from azure.servicebus import ServiceBusMessage, ServiceBusReceivedMessage

from replication.envelope import MESSAGE_FIELDS
from tests.host.brokers import deliver_locked_batch, drain, send
from tests.host.host import WorkerSession

ROOT = Path(__file__).resolve().parents[2]
HOST_JSON = json.loads((ROOT / "host.json").read_text())
MAX_BATCH = int(HOST_JSON["extensions"]["serviceBus"]["maxMessageBatchSize"])


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _body(message: ServiceBusMessage | ServiceBusReceivedMessage) -> bytes:
    body = message.body
    return body if isinstance(body, bytes) else b"".join(body)


def _properties(message: ServiceBusMessage | ServiceBusReceivedMessage) -> dict[str, Any]:
    return {_text(k): _text(v) for k, v in (message.application_properties or {}).items()}


def replicate(
    worker: WorkerSession,
    settings: dict[str, str],
    function: str,
    messages: Sequence[ServiceBusMessage],
    *,
    source: tuple[str, str, str | None],
) -> Any:
    """Publish, deliver as one batch through the worker, settle; returns the response."""
    connection, entity, subscription = source
    send(settings[connection], entity, messages)
    response, _ = deliver_locked_batch(
        worker, function, settings[connection], entity, len(messages), subscription=subscription
    )
    return response


def assert_replicas(
    published: Sequence[ServiceBusMessage], replicas: Sequence[ServiceBusReceivedMessage]
) -> None:
    """Every published message has exactly one replica with the same body and fields."""
    by_id = {str(message.message_id): message for message in replicas}
    assert len(by_id) == len(replicas) == len(published), [m.message_id for m in replicas]
    for original in published:
        replica = by_id[str(original.message_id)]
        assert _body(replica) == _body(original), original.message_id
        for field in MESSAGE_FIELDS:
            assert _text(getattr(replica, field)) == _text(getattr(original, field)), (
                original.message_id,
                field,
            )
        properties = _properties(replica)
        for key, value in _properties(original).items():
            assert properties[key] == value, (original.message_id, key)
            assert type(properties[key]) is type(value), (original.message_id, key)
        assert properties["repl-origin"] == "weu"
        assert properties["repl-hops"] in (1, "1")


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def test_optional_fields_on_some_messages_bodies_and_ttl_survive(
    worker: WorkerSession, emulator_settings: dict[str, str]
) -> None:
    """Fields present on some messages only, every kind of body, with and without TTL."""
    published = [
        ServiceBusMessage(
            b'{"temp":21.50,"at":"2024-05-01T12:00:00Z"}',
            message_id=_id("json"),
            content_type="application/json",
            correlation_id="order-17",
            subject="reading",
            to="dashboards",
            reply_to="replies",
            reply_to_session_id="reply-session",
            time_to_live=timedelta(minutes=7),
            application_properties={"tenant": "contoso", "priority": 5, "ratio": 2.5, "ok": True},
        ),
        ServiceBusMessage(
            b"\x00\xffnot json\x80",
            message_id=_id("binary"),
            partition_key="device-9",
        ),
        ServiceBusMessage(b"", message_id=_id("empty"), subject="heartbeat"),
        ServiceBusMessage(
            "plain text, not JSON: 21.50",
            message_id=_id("text"),
            content_type="text/plain",
            correlation_id="order-18",
            time_to_live=timedelta(hours=2),
        ),
        ServiceBusMessage(b"x" * (250 * 1024), message_id=_id("large")),
    ]
    response = replicate(
        worker, emulator_settings, "jobs-weu-to-neu", published, source=("SB_WEU", "jobs", None)
    )
    assert worker.succeeded(response), response.result.exception.message
    assert_replicas(published, drain(emulator_settings["SB_NEU"], "jobs", len(published)))


def test_batch_without_optional_fields_or_ttl_is_copied_from_metadata(
    worker: WorkerSession, emulator_settings: dict[str, str]
) -> None:
    """Every string field on every message (or on none): no re-read is needed."""
    published = [
        ServiceBusMessage(
            f"order {n}".encode(),
            message_id=_id("full"),
            content_type="text/plain",
            correlation_id=f"c-{n}",
            application_properties={"n": n, "when": datetime(2024, 5, 1, tzinfo=UTC).isoformat()},
        )
        for n in range(5)
    ]
    response = replicate(
        worker, emulator_settings, "jobs-weu-to-neu", published, source=("SB_WEU", "jobs", None)
    )
    assert worker.succeeded(response), response.result.exception.message
    assert_replicas(published, drain(emulator_settings["SB_NEU"], "jobs", len(published)))


def test_largest_batch_from_a_topic_subscription(
    worker: WorkerSession, emulator_settings: dict[str, str]
) -> None:
    """``maxMessageBatchSize`` messages through the subscription trigger of an all-active task."""
    published = [
        ServiceBusMessage(
            json.dumps({"n": n, "price": 10.10}).encode(),
            message_id=_id("bulk"),
            correlation_id=f"c-{n}" if n % 3 == 0 else None,
            time_to_live=timedelta(minutes=30) if n % 2 else None,
            application_properties={"n": n},
        )
        for n in range(MAX_BATCH)
    ]
    response = replicate(
        worker,
        emulator_settings,
        "orders-weu-to-neu",
        published,
        source=("SB_WEU", "orders", "replication"),
    )
    assert worker.succeeded(response), response.result.exception.message
    replicas = drain(emulator_settings["SB_NEU"], "orders", len(published), subscription="audit")
    assert_replicas(published, replicas)
    # The subscription rule's action marked the copy it delivered; the replica keeps the mark,
    # so the peer's replication subscription (replication IS NULL) does not send it back.
    assert all(_properties(replica)["replication"] == 1 for replica in replicas)


def test_a_one_megabyte_body_on_premium(
    worker: WorkerSession, emulator_settings: dict[str, str]
) -> None:
    """Premium namespaces (this topology's) take 1 MB messages; the body arrives byte-exact."""
    body = bytes(range(256)) * (1_000_000 // 256)
    published = [ServiceBusMessage(body, message_id=_id("premium"), subject="big")]
    response = replicate(
        worker, emulator_settings, "jobs-weu-to-neu", published, source=("SB_WEU", "jobs", None)
    )
    assert worker.succeeded(response), response.result.exception.message
    assert_replicas(published, drain(emulator_settings["SB_NEU"], "jobs", len(published)))
