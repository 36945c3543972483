"""Every AMQP property type the SDK can receive, through a replica, checked on the wire.

A python-qpid-proton client (the emulator's own AMQP engine, a real client that can write every
AMQP type) sends a message with one application property per type; the library receives it with
azure-servicebus, converts it (``envelope_from_received``) and sends the replica with
``to_servicebus_message`` (and to an event hub with ``to_event_data``); proton reads the
replica back, so each property's AMQP type on the replica is seen exactly. The expected types
are the type table of ``docs/explanation/host-delivery.md`` ("What a replica keeps").
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.eventhub import EventHubProducerClient
from azure.servicebus import ServiceBusClient
from proton import (
    Message,
    byte,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)
from proton.utils import BlockingConnection

from replication.transport.eventhubs import to_event_data
from replication.transport.servicebus import envelope_from_received, to_servicebus_message

from .test_sdk_roundtrip import read_events

pytestmark = pytest.mark.emulator

ID = uuid.UUID("12345678-1234-5678-1234-567812345678")

# name: (value sent by proton, value on the replica, its proton type on the replica)
CASES: dict[str, tuple[Any, Any, type]] = {
    "null": (None, None, type(None)),
    "bool": (True, True, bool),
    "ubyte": (ubyte(200), 200, int32),
    "ushort": (ushort(60000), 60000, int32),
    "uint": (uint(7), 7, int32),
    "uint-large": (uint(2**32 - 1), 2**32 - 1, int),  # proton decodes an AMQP long as int
    "ulong": (ulong(9), 9, int32),
    "ulong-max": (ulong(2**64 - 1), 2**64 - 1, ulong),
    "byte": (byte(-7), -7, int32),
    "short": (short(-300), -300, int32),
    "int": (int32(-(2**31)), -(2**31), int32),
    "long-small": (5, 5, int32),
    "long-large": (2**40, 2**40, int),
    "long-min": (-(2**63), -(2**63), int),
    "float": (float32(1.5), 1.5, float),  # double on the replica
    "double": (0.1, 0.1, float),
    "timestamp": (timestamp(1_700_000_000_123), 1_700_000_000_123, int),  # long (ms)
    "uuid": (ID, ID, uuid.UUID),
    "string": ("text é", "text é", str),
    "symbol": (symbol("sym"), "sym", str),
    "binary-utf8": (b"abc", "abc", str),
    "binary": (b"\x00\xff\xfe", b"\x00\xff\xfe", bytes),
}


@pytest.fixture
def proton_port(regions: Any) -> int:
    port: int = regions.port("weu")
    return port


def _connect(port: int) -> BlockingConnection:
    return BlockingConnection(f"amqp://127.0.0.1:{port}", allowed_mechs="ANONYMOUS")


def _proton_send(port: int, queue: str, message: Message) -> None:
    connection = _connect(port)
    try:
        connection.create_sender(queue).send(message)
    finally:
        connection.close()


def _proton_receive(port: int, queue: str) -> Message:
    connection = _connect(port)
    try:
        receiver = connection.create_receiver(queue)
        message = receiver.receive(timeout=10)
        receiver.accept()
        return message
    finally:
        connection.close()


def test_every_receivable_property_type_reaches_the_replica_as_the_readme_says(
    regions: Any, proton_port: int
) -> None:
    properties = {name: sent for name, (sent, _, _) in CASES.items()}
    _proton_send(proton_port, "types-in", Message(body=b"x", inferred=True, properties=properties))
    with ServiceBusClient.from_connection_string(regions.connection_string("weu")) as client:
        with client.get_queue_receiver("types-in", max_wait_time=5) as receiver:
            (received,) = receiver.receive_messages(max_message_count=1, max_wait_time=10)
            envelope = envelope_from_received(received, source="weu/types-in")
            receiver.complete_message(received)
        with client.get_queue_sender("types-out") as sender:
            sender.send_messages(to_servicebus_message(envelope))
    replica = _proton_receive(proton_port, "types-out").properties
    assert set(replica) == set(CASES)
    for name, (_, value, kind) in CASES.items():
        got = replica[name]
        if isinstance(got, memoryview):  # proton hands out binary as a buffer
            got = bytes(got)
        assert (got, type(got)) == (value, kind), name

    # The same envelope as an event: big integers and binary survive the Event Hubs SDK too.
    connection = regions.connection_string("ingest")
    marker = uuid.uuid4().hex
    event = to_event_data(envelope.with_properties({"marker": marker}))
    with EventHubProducerClient.from_connection_string(connection, eventhub_name="devices") as p:
        batch = p.create_batch()
        batch.add(event)
        p.send_batch(batch)
    (read,) = read_events(connection, lambda e: e.properties.get(b"marker") == marker.encode())
    # The source message had no MessageId: the event gets the stable one of its position.
    assert read.message_id == f"weu/types-in/{envelope.sequence_number}"
    assert read.properties[b"ulong-max"] == 2**64 - 1
    assert read.properties[b"long-min"] == -(2**63)
    assert read.properties[b"binary"] == b"\x00\xff\xfe"
    assert read.properties[b"uuid"] == ID
