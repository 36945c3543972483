"""Parking and redrive lose nothing: every poison kind, parked and then redriven, end to end.

The local host replicates a batch with poison between good messages; each parked copy is
checked against what was published (every application property, and the body or the marker
saying why it is missing and where the original is); then the cause is fixed the way an
operator would (the target namespace is upgraded to Premium, so large messages fit), and
``python -m replication redrive`` runs. Every replica is compared field by field with the
original, including the replication properties, which must describe the source message and not
the parked copy. What cannot be restored stays parked (or in the source's dead-letter queue)
with its reason: no replica is ever a stand-in (0 bytes, or missing properties).

Poison kinds, Service Bus source (Premium, parking queue in the same namespace; target Standard):

- ``big``: 300 KB, too large for the target: parked whole; redriven after the upgrade.
- ``edge``: as large as the source takes, so its parked copy does not fit the parking queue
  either: a notice is parked and the original is dead-lettered in the source; ``--from parked``
  leaves the notice (named), ``--from dead-letter`` tries the original, whose replica does not
  fit even a Premium target (the replication properties add to it): it stays in the DLQ.
- ``hops``: a malformed ``repl-hops``: parked whole; redriven, parked again with its reason.
- ``value`` / ``sequence``: AMQP value and sequence bodies: dead-lettered whole in the source
  (the local host can); a redrive leaves them there.

Event Hubs source (target queue Standard, with duplicate detection; parking queue Standard,
in a namespace of its own): ``value`` / ``sequence`` bodies and a ``map`` property
(unconvertible: a notice with every property that converts, the position recorded), and
``oversize`` and an ``anonymous`` event without message-id, each as large as the event hub
takes (too large for the queue and for the parking queue: a notice with the position). After
the upgrade the redrive re-reads each original from the hub: the oversize ones are replicated
exactly, the unconvertible ones stay parked with their reason, and so does a notice whose event
is no longer in the hub. A second run of the local host then delivers every event again (no
checkpoint store: it starts from the beginning of each partition), and the target's duplicate
detection keeps one copy of each, redriven or not.

The undecodable property kinds (char, decimal32/64/128) never reach parking: see
``test_poison.py``; they wait in the source's dead-letter queue.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.amqp import AmqpAnnotatedMessage, AmqpMessageProperties
from azure.servicebus import ServiceBusMessage
from proton import Message

from replication.cli import main
from replication.envelope import Envelope
from replication.exit_codes import ExitCode
from replication.hosts.local import LocalHost
from replication.planning import DeadLetter
from replication.properties import (
    DEAD_LETTER_BODY_OMITTED,
    DEAD_LETTER_ENQUEUED_TIME,
    DEAD_LETTER_ORIGINAL,
    DEAD_LETTER_PARTITION,
    DEAD_LETTER_PROPERTIES_OMITTED,
    DEAD_LETTER_REASON,
    DEAD_LETTER_SEQUENCE,
    DEAD_LETTER_SOURCE,
    REPL_ENQUEUED_TIME,
    REPL_HOPS,
    REPL_OFFSET,
    REPL_ORIGIN,
    REPL_PATH,
    REPL_SEQUENCE,
    format_timestamp,
)
from replication.runtime import parked_copy
from replication.transport.servicebus import to_servicebus_message

from .harness import Cluster, Node, read_partition, topology_document
from .test_poison import EVENT_HUB_TOPOLOGY as POISON_EVENT_HUB_TOPOLOGY
from .test_poison import _largest, _largest_body, _proton_send

# --- reading the brokers as they are, with the SDKs ------------------------------------------


def _text(value: Any) -> Any:
    return bytes(value).decode("utf-8") if isinstance(value, bytes | memoryview) else value


def _properties(message: Any) -> dict[str, Any]:
    return {_text(k): _text(v) for k, v in (message.application_properties or {}).items()}


def _body(message: Any) -> bytes:
    body = message.body
    return body if isinstance(body, bytes) else b"".join(bytes(part) for part in body)


def _by_id(messages: list[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for message in messages:
        assert str(message.message_id) not in found, f"two copies of {message.message_id}"
        found[str(message.message_id)] = message
    return found


def _upgrade_to_premium(node: Node) -> None:
    """The operator's fix: the namespace takes messages of up to 1 MB (restarted with what it
    persisted)."""
    node.stop()
    document = json.loads(node.config_path.read_text(encoding="utf-8"))
    for namespace in document["UserConfig"]["Namespaces"]:
        namespace["MaxMessageSizeInKilobytes"] = 1024
    node.config_path.write_text(json.dumps(document), encoding="utf-8")
    node.start()


@pytest.fixture
def redrive(monkeypatch: pytest.MonkeyPatch) -> Any:
    def run(cluster: Cluster, *args: str) -> int:
        for name, value in cluster.environ.items():
            monkeypatch.setenv(name, value)
        return main(["redrive", "--topology", str(cluster.topology_path), *args])

    return run


def _replicate(cluster: Cluster, expected: int) -> None:
    with LocalHost(cluster.topology, cluster.environ) as host:
        assert host.wait_until_idle(idle_seconds=3, timeout=180, at_least=expected)
        assert not host.failing()


def _assert_replica_is_original(
    replica: Any,
    original: dict[str, Any],
    *,
    origin: str,
    path: str,
    enqueued: datetime,
    sequence: int,
    offset: str | None = None,
) -> None:
    """Field by field: body, message fields, every application property, and the replication
    properties of the first hop from the source message (not from a parked copy)."""
    assert _body(replica) == original["body"]
    for field in ("message_id", "subject", "content_type", "correlation_id"):
        assert _text(getattr(replica, field)) == original.get(field), field
    expected = {
        **original["properties"],
        REPL_ORIGIN: origin,
        REPL_PATH: path,
        REPL_HOPS: 1,
        REPL_ENQUEUED_TIME: format_timestamp(enqueued),
        REPL_SEQUENCE: str(sequence),
        REPL_OFFSET: offset if offset is not None else str(sequence),
    }
    assert _properties(replica) == expected


# --- Service Bus source ----------------------------------------------------------------------


def test_service_bus_poison_is_parked_whole_or_kept_in_the_source_and_redriven_exactly(
    tmp_path: Path, redrive: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")], premium=["weu"])
    with Cluster(document, tmp_path) as cluster:
        edge_size = _largest_body(cluster, "weu") - 64
        fields = {"subject": "s", "content_type": "application/x-test", "correlation_id": "c"}
        originals: dict[str, dict[str, Any]] = {
            "big": {"body": b"b" * 300_000, "properties": {"eid": "big", "n": 1}, **fields},
            "edge": {"body": b"e" * edge_size, "properties": {"eid": "edge"}, **fields},
            "hops": {
                "body": b"{}",
                "properties": {"eid": "hops", REPL_HOPS: "many", REPL_PATH: "eus"},
                **fields,
            },
        }
        good = [
            ServiceBusMessage(b"g", message_id=f"good-{i}", application_properties={"n": i})
            for i in range(6)
        ]
        poison = [
            ServiceBusMessage(
                spec["body"],
                message_id=name,
                application_properties=dict(spec["properties"]),
                subject=spec["subject"],
                content_type=spec["content_type"],
                correlation_id=spec["correlation_id"],
            )
            for name, spec in originals.items()
        ]
        cluster.publish("weu", "orders", [*good[:3], *poison])
        _proton_send(
            cluster.nodes["weu"].port,
            "orders",
            Message(id="value", body="a string value", properties={"eid": "value"}),
            Message(id="sequence", body=["one", "two"], inferred=True, properties={"eid": "seq"}),
        )
        cluster.publish("weu", "orders", good[3:])
        _replicate(cluster, 11)
        audit = _by_id(cluster.drain("weu", "orders", "audit", idle=1))  # the source's copies

        # What was parked: the original plus its reason, or a notice; nothing is lost.
        parked = _by_id(cluster.peek("weu", "replication-parked"))
        dead = _by_id(cluster.peek("weu", "orders", "to-neu", dead_letter=True))
        assert sorted(parked) == ["big", "edge", "hops"]
        assert sorted(dead) == ["edge", "sequence", "value"]
        for name in ("big", "hops"):
            copy = parked[name]
            assert _body(copy) == originals[name]["body"]
            properties = _properties(copy)
            assert originals[name]["properties"].items() <= properties.items()
            assert DEAD_LETTER_BODY_OMITTED not in properties
            assert properties[DEAD_LETTER_SOURCE] == "weu/orders/Subscriptions/to-neu"
            assert properties[DEAD_LETTER_SEQUENCE] != copy.sequence_number
        assert _properties(parked["big"])[DEAD_LETTER_REASON] == "MessageSizeExceeded"
        assert _properties(parked["hops"])[DEAD_LETTER_REASON] == "MalformedReplicationProperty"
        notice = _properties(parked["edge"])
        assert _body(parked["edge"]) == b""
        assert notice["eid"] == "edge"
        assert notice[DEAD_LETTER_REASON] == "MessageSizeExceeded"
        assert notice[DEAD_LETTER_BODY_OMITTED].startswith(f"{edge_size} bytes, sha256 ")
        assert notice[DEAD_LETTER_ORIGINAL] == "weu/orders/Subscriptions/to-neu/$DeadLetterQueue"
        assert _body(dead["edge"]) == originals["edge"]["body"]
        assert dead["edge"].dead_letter_reason == "MessageSizeExceeded"
        assert _properties(dead["edge"])["eid"] == "edge"
        assert {dead[n].dead_letter_reason for n in ("value", "sequence")} == {
            "UnsupportedBodyType"
        }

        # The operator fixes the cause, then redrives: the dry run shows each decision.
        _upgrade_to_premium(cluster.nodes["neu"])
        assert redrive(cluster, "--task", "weu-to-neu", "--from", "parked", "--dry-run") == 0
        out = capsys.readouterr().out
        assert "would redrive 2 message(s)" in out
        assert "would leave parked, original not restorable: 1" in out
        assert "    edge: repl-dead-letter-body-omitted: " in out
        assert "(redrive it --from dead-letter)" in out

        assert redrive(cluster, "--task", "weu-to-neu", "--from", "parked") == ExitCode.OK
        out = capsys.readouterr().out
        assert "read 2, forwarded 1, skipped 0, parked again 1" in out
        replicas = _by_id(cluster.drain("neu", "orders", "audit", idle=1))
        assert sorted(r for r in replicas if not r.startswith("good-")) == ["big"]
        # The task's source message is the to-neu subscription's copy, which its rule marked
        # (SET replication = 1): that flag travels with the replica.
        source_message = {
            "message_id": "big",
            **originals["big"],
            "properties": {**originals["big"]["properties"], "replication": 1},
        }
        _assert_replica_is_original(
            replicas["big"],
            source_message,
            origin="weu",
            path="weu;neu",
            enqueued=audit["big"].enqueued_time_utc,
            sequence=_properties(parked["big"])[DEAD_LETTER_SEQUENCE],
        )
        left = _by_id(cluster.peek("weu", "replication-parked"))
        assert sorted(left) == ["edge", "hops"]
        assert _body(left["hops"]) == originals["hops"]["body"]  # parked again, whole
        assert _properties(left["hops"])[DEAD_LETTER_REASON] == "MalformedReplicationProperty"
        assert left["edge"].sequence_number == parked["edge"].sequence_number  # untouched

        # The originals in the source's DLQ: the value bodies cannot be replicated, and the
        # edge's replica does not fit even the upgraded target: all three stay, none is lost.
        assert redrive(cluster, "--task", "weu-to-neu", "--from", "dead-letter") == ExitCode.OK
        out = capsys.readouterr().out
        assert "read 3, forwarded 0, skipped 0, parked again 1" in out
        assert "left in place (rejected, no deadLetterTarget): 2" in out
        assert "left in place (too large to park whole; a notice was parked): 1" in out
        assert sorted(_by_id(cluster.peek("weu", "orders", "to-neu", dead_letter=True))) == [
            "edge",
            "sequence",
            "value",
        ]
        assert cluster.drain("neu", "orders", "audit", idle=1) == []


# --- Event Hubs source -----------------------------------------------------------------------


def _event_hub_topology() -> dict[str, Any]:
    """``test_poison``'s event hub topology, with duplicate detection on the target queue and
    the parking queue in a Standard namespace of its own (so the upgrade of the target's leaves
    it as small as it was)."""
    document = copy.deepcopy(POISON_EVENT_HUB_TOPOLOGY)
    weu = document["namespaces"][1]
    weu["queues"] = [
        {"name": "device-events", "requiresDuplicateDetection": True},
        {"name": "replication-parked"},
    ]
    document["namespaces"].append(
        {
            **weu,
            "name": "park",
            "fullyQualifiedNamespace": "park.servicebus.windows.net",
            "connection": "SB_PARK",
            "queues": [{"name": "replication-parked"}],
        }
    )
    (task,) = document["tasks"]
    task["deadLetterTarget"] = {"namespace": "park", "entity": "replication-parked"}
    return document


def _event(message_id: str | None, body: bytes, properties: dict[str | bytes, Any]) -> EventData:
    event = EventData(body)
    if message_id is not None:
        event.message_id = message_id
    event.properties = properties
    return event


def _amqp_properties(message_id: str) -> AmqpMessageProperties:
    properties: AmqpMessageProperties = AmqpMessageProperties(  # type: ignore[no-untyped-call]
        message_id=message_id
    )
    return properties


def test_event_hub_poison_keeps_its_properties_and_position_and_redrive_rereads_the_original(
    tmp_path: Path, redrive: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with Cluster(_event_hub_topology(), tmp_path) as cluster:
        connection = cluster.nodes["ingest"].connection_string
        with EventHubProducerClient.from_connection_string(
            connection, eventhub_name="devices"
        ) as producer:

            def fits(size: int) -> bool:
                try:
                    producer.create_batch(partition_id="0").add(
                        _event("oversize", b"o" * size, {"eid": "anonymous"})
                    )
                except ValueError:
                    return False
                return True

            # As large as the event hub takes: its replica (with the replication properties)
            # is too large for a Standard queue, and so is its parked copy.
            size = _largest(fits)
        oversize = {
            "oversize": _event("oversize", b"o" * size, {"eid": "oversize"}),
            "anonymous": _event(None, b"a" * size, {"eid": "anonymous"}),
        }
        unconvertible: dict[str, EventData | AmqpAnnotatedMessage] = {
            "value": AmqpAnnotatedMessage(
                value_body="a string value",
                application_properties={"eid": "value"},
                properties=_amqp_properties("value"),
            ),
            "sequence": AmqpAnnotatedMessage(
                sequence_body=[["one", 2]],
                application_properties={"eid": "sequence"},
                properties=_amqp_properties("sequence"),
            ),
            "map": _event("map", b"{}", {"eid": "map", "tags": {"a": 1}}),
        }
        with EventHubProducerClient.from_connection_string(
            connection, eventhub_name="devices"
        ) as producer:
            items: list[EventData | AmqpAnnotatedMessage] = [
                *(_event(f"good-{i}", b"{}", {"n": i}) for i in range(3)),
                *unconvertible.values(),
                *oversize.values(),
                *(_event(f"good-{i}", b"{}", {"n": i}) for i in range(3, 6)),
            ]
            for item in items:
                batch = producer.create_batch(partition_id="0")
                batch.add(item)
                producer.send_batch(batch)
        events = read_partition(connection, "devices", "0", idle=3, count=11)
        assert len(events) >= 11
        events = events[:11]
        by_eid = {_text((e.properties or {}).get(b"eid")): e for e in events}
        anonymous_id = f"ingest/devices/0/{by_eid['anonymous'].sequence_number}"
        _replicate(cluster, 11)
        delivered = _by_id(cluster.peek("weu", "device-events"))
        assert sorted(delivered) == [f"good-{i}" for i in range(6)]

        parked = _by_id(cluster.peek("park", "replication-parked"))
        assert sorted(parked) == sorted(["value", "sequence", "map", "oversize", anonymous_id])
        reasons = {
            "value": "UnsupportedBodyType",
            "sequence": "UnsupportedBodyType",
            "map": "UnsupportedApplicationProperty",
            "oversize": "MessageSizeExceeded",
            "anonymous": "MessageSizeExceeded",
        }
        for eid, reason in reasons.items():
            copy = parked[anonymous_id if eid == "anonymous" else eid]
            event = by_eid[eid]
            properties = _properties(copy)
            assert properties[DEAD_LETTER_REASON] == reason
            assert properties["eid"] == eid  # the application properties that convert
            assert properties[DEAD_LETTER_SEQUENCE] == event.sequence_number
            assert properties[DEAD_LETTER_PARTITION] == "0"
            assert event.enqueued_time is not None
            assert properties[DEAD_LETTER_ENQUEUED_TIME] == format_timestamp(event.enqueued_time)
            assert (
                f"partition 0 sequence {event.sequence_number}" in properties[DEAD_LETTER_ORIGINAL]
            )
            if eid == "map":
                assert _body(copy) == b"{}"
                assert "'tags'" in properties[DEAD_LETTER_PROPERTIES_OMITTED]
            else:  # never an empty body without the marker saying why
                assert _body(copy) == b""
                assert properties[DEAD_LETTER_BODY_OMITTED]
        assert _properties(parked["value"])[DEAD_LETTER_BODY_OMITTED].startswith(
            "an AMQP value body"
        )
        assert _properties(parked["oversize"])[DEAD_LETTER_BODY_OMITTED].startswith(
            f"{size} bytes, sha256 "
        )
        # A notice whose event the hub no longer has (past retention).
        gone = Envelope(
            body=b"",
            message_id="gone",
            application_properties={
                "eid": "gone",
                DEAD_LETTER_BODY_OMITTED: "1 bytes, sha256 00: too large for the parking entity",
            },
            sequence_number=999,
            partition_id="1",
            source="ingest/devices",
        )
        with cluster.client("park") as client, client.get_queue_sender("replication-parked") as s:
            s.send_messages(
                to_servicebus_message(
                    parked_copy(
                        DeadLetter(gone, "MessageSizeExceeded", "test"),
                        "ingest/devices/ConsumerGroups/replication",
                        "event hub ingest/devices partition 1 sequence 999",
                    )
                )
            )

        _upgrade_to_premium(cluster.nodes["weu"])
        assert redrive(cluster, "--task", "devices-to-queue", "--dry-run") == ExitCode.OK
        out = capsys.readouterr().out
        assert "would redrive 5 message(s)" in out
        assert "of which would re-read the original from the event hub: 5" in out
        assert "would leave parked, original not restorable: 1" in out
        assert "event hub ingest/devices no longer has partition 1, sequence 999" in out

        assert redrive(cluster, "--task", "devices-to-queue") == ExitCode.OK
        out = capsys.readouterr().out
        assert "read 5, forwarded 2, skipped 0, parked again 0" in out
        assert "left parked, original not restorable: 3" in out
        replicas = _by_id(cluster.peek("weu", "device-events"))
        assert sorted(set(replicas) - set(delivered)) == sorted(["oversize", anonymous_id])
        for eid, message_id in (("oversize", "oversize"), ("anonymous", anonymous_id)):
            event = by_eid[eid]
            assert event.enqueued_time is not None
            assert event.sequence_number is not None
            _assert_replica_is_original(
                replicas[message_id],
                {
                    "message_id": message_id,
                    "body": _body(event),
                    "properties": {_text(k): _text(v) for k, v in event.properties.items()},
                },
                origin="ingest",
                path="ingest;weu",
                enqueued=event.enqueued_time,
                sequence=event.sequence_number,
                offset=str(event.offset),
            )
        left = _by_id(cluster.peek("park", "replication-parked"))
        assert sorted(left) == ["gone", "map", "sequence", "value"]
        assert all(
            left[name].sequence_number == parked[name].sequence_number
            for name in ("map", "sequence", "value")
        )

        # A late real delivery of every event (a restart without checkpoints reads the
        # partitions from the beginning): the target keeps one copy of each.
        _replicate(cluster, 11)
        final = [str(m.message_id) for m in cluster.drain("weu", "device-events", idle=1)]
    assert sorted(final) == sorted([*(f"good-{i}" for i in range(6)), "oversize", anonymous_id])
