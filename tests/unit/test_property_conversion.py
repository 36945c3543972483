"""Application-property conversion and message identity, without a broker (the wire-level
checks are tests/e2e/test_property_types.py and test_poison_messages.py)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from azure.servicebus._pyamqp.types import TYPE, VALUE, AMQPTypes

from replication.envelope import Envelope
from replication.exceptions import (
    MalformedReplicationPropertyError,
    MessageRejectedError,
    UndecodableFieldError,
    UnsupportedPropertyError,
)
from replication.loops import check_forward
from replication.properties import read_state, stamp
from replication.transport._common import text
from replication.transport._properties import decode_properties, sdk_properties
from replication.transport.eventhubs import to_event_data
from replication.transport.servicebus import replica_ids, to_servicebus_message


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        (2**31 - 1, 2**31 - 1),
        (-(2**31), -(2**31)),
        (2**31, {TYPE: AMQPTypes.long, VALUE: 2**31}),
        (-(2**63), {TYPE: AMQPTypes.long, VALUE: -(2**63)}),
        (2**63, {TYPE: AMQPTypes.ulong, VALUE: 2**63}),
        (b"\xff", {TYPE: AMQPTypes.binary, VALUE: b"\xff"}),
        (b"abc", {TYPE: AMQPTypes.binary, VALUE: b"abc"}),
        (True, True),
        (None, None),
        ("s", "s"),
        (1.5, 1.5),
        (uuid.UUID(int=1), uuid.UUID(int=1)),
        (Decimal("1.5"), Decimal("1.5")),
    ],
)
def test_values_the_sdk_would_change_or_refuse_are_sent_typed(value: Any, sent: Any) -> None:
    assert sdk_properties({"p": value}) == {"p": sent}


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, Decimal("NaN"), {"a": 1}, [1]])
def test_values_no_amqp_simple_type_holds_are_rejected_on_send(value: Any) -> None:
    with pytest.raises(UnsupportedPropertyError):
        sdk_properties({"p": value})


def test_received_properties_decode_text_and_keep_binary() -> None:
    assert decode_properties({b"k": b"v", b"b": b"\xff", "n": 1}) == {
        "k": "v",
        "b": b"\xff",
        "n": 1,
    }


def test_received_text_beyond_ascii_decodes_as_utf8() -> None:
    """ASCII keys and values take a shorter route; the rest must decode as before."""
    assert decode_properties({"é".encode(): "ü".encode(), b"t": True, b"x": None}) == {
        "é": "ü",
        "t": True,
        "x": None,
    }


@pytest.mark.parametrize("properties", [{b"\xff": 1}, {b"m": {b"a": 1}}, {b"l": [1, 2]}, {1: "x"}])
def test_unsupported_received_properties_are_rejections(properties: dict[Any, Any]) -> None:
    with pytest.raises(UnsupportedPropertyError) as caught:
        decode_properties(properties)
    assert isinstance(caught.value, MessageRejectedError)
    assert caught.value.reason == "UnsupportedApplicationProperty"


def test_a_binary_message_id_that_is_not_utf8_is_a_rejection() -> None:
    with pytest.raises(UndecodableFieldError, match="MessageId"):
        text(b"\xff\x00", "MessageId")
    assert text(b"id", "MessageId") == "id"
    assert text(7, "MessageId") == "7"


@pytest.mark.parametrize(
    "properties",
    [
        {"repl-path": b"\xff\xfe"},
        {"repl-origin": b"\xff"},
        {"repl-target": b"\xff"},
        {"repl-hops": b"\xff"},
        {"repl-hops": "many"},
        {"repl-hops": -1},
        {"repl-hops": 1.5},
        {"repl-hops": True},
        {"repl-hops": uuid.UUID(int=3)},
    ],
)
def test_garbage_replication_properties_are_malformed(properties: dict[str, Any]) -> None:
    envelope = Envelope(application_properties=properties)
    with pytest.raises(MalformedReplicationPropertyError):
        read_state(properties)
    with pytest.raises(MalformedReplicationPropertyError):
        check_forward(envelope, "neu", max_hops=3)
    with pytest.raises(MalformedReplicationPropertyError):
        stamp(envelope, source_namespace="weu", target_namespace="neu")


def test_stamping_onto_a_binary_hop_list_is_malformed() -> None:
    envelope = Envelope(application_properties={"repl-sequence": b"\xff"}, sequence_number=1)
    with pytest.raises(MalformedReplicationPropertyError, match="repl-sequence"):
        stamp(envelope, source_namespace="weu", target_namespace="neu")


def test_a_servicebus_message_without_id_gets_its_source_position() -> None:
    envelope = Envelope(sequence_number=42, source="weu/orders")
    assert replica_ids(envelope)[0] == "weu/orders/42"
    assert to_servicebus_message(envelope).message_id == "weu/orders/42"
    assert to_event_data(envelope).message_id == "weu/orders/42"
    long_source = Envelope(sequence_number=42, source="weu/" + "q" * 200)
    first = to_servicebus_message(long_source).message_id
    assert first == to_servicebus_message(long_source).message_id
    assert first is not None
    assert len(first) == 36
    # A message id of its own is always kept.
    assert replica_ids(envelope.replace(message_id="m-1"))[0] == "m-1"
