"""Functions host batch shapes -> Envelope -> SDK messages, field by field.

The trigger inputs are built as the Functions host sends them to the Python worker (Datum values
of the types the worker produces: ``collection_bytes``, ``collection_string``,
``collection_sint64`` and ``json``) and decoded through azure-functions' own converters, so the
code path is the one that runs in Azure. The host itself has no local stand-in here.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from azure.functions import meta
from azure.functions.eventhub import EventHubTriggerConverter
from azure.functions.servicebus import ServiceBusMessageInConverter

from replication.envelope import Envelope
from replication.transport.eventhubs import to_event_data
from replication.transport.functions import (
    envelopes_from_event_hub_batch,
    envelopes_from_servicebus_batch,
)
from replication.transport.servicebus import to_servicebus_message

ENQUEUED = "2024-05-01T12:00:00.250Z"
SCHEDULED = "2024-05-01T11:59:00Z"


def _strings(values: list[Any]) -> meta.Datum:
    return meta.Datum(SimpleNamespace(string=values), "collection_string")


def _ints(values: list[int]) -> meta.Datum:
    return meta.Datum(SimpleNamespace(sint64=values), "collection_sint64")


def _json(values: list[Any]) -> meta.Datum:
    return meta.Datum(json.dumps(values), "json")


def servicebus_batch() -> list[Any]:
    properties = [{"tenant": "contoso", "priority": 5, "repl-origin": "weu"}, {}]
    metadata = {
        "ApplicationPropertiesArray": _json(properties),
        "UserPropertiesArray": _json(properties),
        "ContentTypeArray": _strings(["application/json", "text/plain"]),
        "CorrelationIdArray": _strings(["corr-1", "corr-2"]),
        "DeadLetterErrorDescriptionArray": _strings(["too slow", ""]),
        "DeadLetterReasonArray": _strings(["Timeout", ""]),
        "DeliveryCountArray": _ints([3, 1]),
        "EnqueuedTimeUtcArray": _json([ENQUEUED, ENQUEUED]),
        "MessageIdArray": _strings(["m-1", "m-2"]),
        "PartitionKeyArray": _strings(["s-1", "s-2"]),
        "ReplyToArray": _strings(["replies", ""]),
        "ReplyToSessionIdArray": _strings(["rs-1", ""]),
        "ScheduledEnqueueTimeUtcArray": _strings([SCHEDULED, SCHEDULED]),
        "SequenceNumberArray": _ints([41, 42]),
        "SessionIdArray": _strings(["s-1", "s-2"]),
        "SubjectArray": _strings(["order", "invoice"]),
        # azure-functions 1.26 cannot parse TimeSpans with a day part ("1.00:00:00"): see README.
        "TimeToLiveArray": _strings(["00:02:00", "12:00:00"]),
        "ToArray": _strings(["orders", ""]),
    }
    data = meta.Datum(SimpleNamespace(bytes=[b'{"id": 1}', b"second"]), "collection_bytes")
    decoded = ServiceBusMessageInConverter.decode(data, trigger_metadata=metadata)
    assert isinstance(decoded, list)
    return decoded


def test_servicebus_batch_fields_reach_the_envelope() -> None:
    first, second = envelopes_from_servicebus_batch(servicebus_batch())
    assert first.body == b'{"id": 1}'
    assert first.message_id == "m-1"
    assert first.correlation_id == "corr-1"
    assert first.content_type == "application/json"
    assert first.subject == "order"
    assert first.to == "orders"
    assert first.reply_to == "replies"
    assert first.reply_to_session_id == "rs-1"
    assert first.session_id == "s-1"
    assert first.partition_key == "s-1"
    assert first.time_to_live == timedelta(minutes=2)
    assert first.scheduled_enqueue_time_utc == datetime(2024, 5, 1, 11, 59, tzinfo=UTC)
    assert dict(first.application_properties) == {
        "tenant": "contoso",
        "priority": 5,
        "repl-origin": "weu",
    }
    assert first.enqueued_time_utc == datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert first.sequence_number == 41
    assert first.delivery_count == 3
    assert first.dead_letter_reason == "Timeout"
    assert first.dead_letter_error_description == "too slow"
    assert second.body == b"second"
    assert second.time_to_live == timedelta(hours=12)
    assert dict(second.application_properties) == {}


def test_servicebus_envelope_to_sdk_message_keeps_every_writable_field() -> None:
    first = envelopes_from_servicebus_batch(servicebus_batch())[0]
    message = to_servicebus_message(first)
    assert b"".join(message.body) == b'{"id": 1}'
    assert message.message_id == "m-1"
    assert message.correlation_id == "corr-1"
    assert message.content_type == "application/json"
    assert message.subject == "order"
    assert message.to == "orders"
    assert message.reply_to == "replies"
    assert message.reply_to_session_id == "rs-1"
    assert message.session_id == "s-1"
    assert message.partition_key == "s-1"
    assert message.time_to_live == timedelta(minutes=2)
    assert message.scheduled_enqueue_time_utc == datetime(2024, 5, 1, 11, 59, tzinfo=UTC)
    assert message.application_properties == {
        "tenant": "contoso",
        "priority": 5,
        "repl-origin": "weu",
    }


def event_hub_batch() -> list[Any]:
    system = [
        {
            "EnqueuedTimeUtc": ENQUEUED,
            "PartitionKey": "device-7",
            "SequenceNumber": 17,
            "Offset": "4096",
            "x-opt-sequence-number": 17,
            "x-opt-offset": "4096",
            "message-id": "evt-1",
            "correlation-id": "c-9",
            "content-type": "application/json",
            "subject": "reading",
            "to": "telemetry",
            "reply-to": "commands",
        },
        {
            "EnqueuedTimeUtc": ENQUEUED,
            "PartitionKey": None,
            "SequenceNumber": 18,
            "Offset": "4160",
        },
    ]
    metadata = {
        "SystemPropertiesArray": _json(system),
        "PropertiesArray": _json([{"unit": "C", "repl-hops": 1}, {}]),
        "PartitionKeyArray": _json(["device-7", None]),
        "SequenceNumberArray": _json([17, 18]),
        "OffsetArray": _json(["4096", "4160"]),
        "EnqueuedTimeUtcArray": _json([ENQUEUED, ENQUEUED]),
        "PartitionContext": _json(
            {"ConsumerGroup": "replication", "EventHubName": "devices", "PartitionId": "3"}
        ),
    }
    data = meta.Datum(SimpleNamespace(bytes=[b"21.5", b"22.0"]), "collection_bytes")
    decoded = EventHubTriggerConverter.decode(data, trigger_metadata=metadata)
    assert isinstance(decoded, list)
    return decoded


def test_event_hub_batch_reads_per_event_properties_from_trigger_metadata() -> None:
    first, second = envelopes_from_event_hub_batch(event_hub_batch())
    assert first.body == b"21.5"
    assert first.message_id == "evt-1"
    assert first.correlation_id == "c-9"
    assert first.content_type == "application/json"
    assert first.subject == "reading"
    assert first.to == "telemetry"
    assert first.reply_to == "commands"
    assert first.partition_key == "device-7"
    assert first.sequence_number == 17
    assert first.offset == "4096"
    assert first.partition_id == second.partition_id == "3"
    assert first.enqueued_time_utc == datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert dict(first.application_properties) == {"unit": "C", "repl-hops": 1}
    assert second.message_id is None
    assert second.offset == "4160"
    assert dict(second.application_properties) == {}


def test_event_to_servicebus_uses_message_id_else_position_and_partition_key_as_session() -> None:
    first, second = envelopes_from_event_hub_batch(event_hub_batch())
    message = to_servicebus_message(first)
    assert message.message_id == "evt-1"
    assert message.session_id == "device-7"
    assert message.partition_key == "device-7"
    fallback = to_servicebus_message(second)
    assert fallback.message_id == "3:4160"
    assert fallback.session_id is None


def test_events_at_the_same_offset_of_different_partitions_get_different_message_ids() -> None:
    """Offsets repeat across partitions; duplicate detection must not see copies in them."""
    ids = {
        to_servicebus_message(Envelope(body=b"x", offset="0", partition_id=p)).message_id
        for p in ("0", "1")
    }
    assert ids == {"0:0", "1:0"}
    assert to_servicebus_message(Envelope(body=b"x", offset="0")).message_id == "0"


def test_event_envelope_to_event_data_keeps_properties_and_ids() -> None:
    first = envelopes_from_event_hub_batch(event_hub_batch())[0]
    event = to_event_data(first)
    assert event.body_as_str() == "21.5"
    assert event.message_id == "evt-1"
    assert event.correlation_id == "c-9"
    assert event.content_type == "application/json"
    assert event.properties == {"unit": "C", "repl-hops": 1}
    amqp = event.raw_amqp_message.properties
    assert amqp is not None
    assert (amqp.subject, amqp.to, amqp.reply_to) == ("reading", "telemetry", "commands")
