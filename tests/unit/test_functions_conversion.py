"""Batch trigger metadata -> Envelope -> SDK messages, for the decisions the converters make.

The metadata here is what ``azure.functions`` exposes as ``message.metadata``: the host's
``TypedData`` decoded to Python (``collection_string`` -> list of str, ``collection_sint64`` ->
list of int, JSON -> parsed). How the host builds it, and the whole path through the real Python
worker, is tested in ``tests/host/``; these tests pin the converters' rules with hand-made
metadata of the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from replication.envelope import Envelope
from replication.exceptions import MessageRejectedError
from replication.hosts.functions import (
    STRING_FIELDS,
    TriggerMetadataError,
    envelopes_from_event_hub_batch,
    envelopes_from_servicebus_batch,
    parse_host_time,
    reread_reasons,
)
from replication.planning import DeadLetter
from replication.properties import DEAD_LETTER_PROPERTIES_OMITTED
from replication.transport.eventhubs import to_event_data
from replication.transport.servicebus import MAX_MESSAGE_ID_LENGTH, to_servicebus_message

ENQUEUED = "2024-05-01T12:00:00.25+00:00"
NEVER = "9999-12-31T23:59:59.9999999+00:00"


@dataclass
class Delivered:
    """One message of a batch as ``azure.functions`` hands it over (body + batch metadata)."""

    body: bytes
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def get_body(self) -> bytes:
        return self.body


def servicebus_batch(size: int, **arrays: list[Any]) -> list[Delivered]:
    metadata: dict[str, Any] = {
        "SequenceNumberArray": [100 + n for n in range(size)],
        "DeliveryCountArray": [1] * size,
        "EnqueuedTimeArray": [ENQUEUED] * size,
        "ExpiresAtArray": [NEVER] * size,
        "ApplicationPropertiesArray": [{"n": n} for n in range(size)],
        "UserPropertiesArray": [{"n": n} for n in range(size)],
        "MessageIdArray": [f"m-{n}" for n in range(size)],
    }
    for name in STRING_FIELDS:
        if name != "MessageId":
            metadata[f"{name}Array"] = []
    metadata.update(arrays)
    return [Delivered(f"body {n}".encode(), metadata) for n in range(size)]


class Reread:
    """Records re-reads and answers with complete envelopes."""

    def __init__(self, complete: Mapping[int, Envelope]) -> None:
        self.complete = complete
        self.calls: list[list[int]] = []

    def __call__(self, sequence_numbers: Sequence[int]) -> Mapping[int, Envelope]:
        self.calls.append(list(sequence_numbers))
        return self.complete


def test_complete_string_arrays_are_used_without_a_reread() -> None:
    batch = servicebus_batch(2, CorrelationIdArray=["c-0", "c-1"], SubjectArray=["a", "b"])
    reread = Reread({})
    first, second = envelopes_from_servicebus_batch(batch, source="weu/jobs", reread=reread)
    assert reread.calls == []
    assert (first.body, first.message_id, first.correlation_id, first.subject) == (
        b"body 0",
        "m-0",
        "c-0",
        "a",
    )
    assert (second.correlation_id, second.subject, second.content_type) == ("c-1", "b", None)
    assert first.time_to_live is None
    assert first.sequence_number == 100
    assert first.source == "weu/jobs"
    assert first.enqueued_time_utc == datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert dict(second.application_properties) == {"n": 1}


def test_a_shortened_string_array_is_never_read_by_position() -> None:
    """Message 0 has no CorrelationId: the host sends ["c-1"]; position 0 is NOT message 0's."""
    batch = servicebus_batch(2, CorrelationIdArray=["c-1"])
    assert reread_reasons(batch[0].metadata, 2) == [
        "CorrelationIdArray has entries for some messages only"
    ]
    complete = {
        100: Envelope(message_id="m-0", correlation_id=None),
        101: Envelope(message_id="m-1", correlation_id="c-1"),
    }
    reread = Reread(complete)
    first, second = envelopes_from_servicebus_batch(batch, reread=reread)
    assert reread.calls == [[100, 101]]
    assert first.correlation_id is None
    assert second.correlation_id == "c-1"
    # Bodies and properties still come from the trigger.
    assert (first.body, dict(first.application_properties)) == (b"body 0", {"n": 0})


def test_a_ttl_is_read_from_the_source_because_the_batch_does_not_carry_it() -> None:
    batch = servicebus_batch(1, ExpiresAtArray=["2024-05-01T12:02:00.25+00:00"])
    complete = {100: Envelope(message_id="m-0", time_to_live=timedelta(minutes=2))}
    (envelope,) = envelopes_from_servicebus_batch(batch, reread=Reread(complete))
    assert envelope.time_to_live == timedelta(minutes=2)


def test_without_a_way_to_reread_an_inexact_batch_fails_instead_of_guessing() -> None:
    batch = servicebus_batch(3, SubjectArray=["only-one"])
    with pytest.raises(TriggerMetadataError, match="SubjectArray"):
        envelopes_from_servicebus_batch(batch)


def test_a_message_gone_from_the_source_fails_the_batch() -> None:
    batch = servicebus_batch(2, ToArray=["x"])
    with pytest.raises(TriggerMetadataError, match="sequence number 101"):
        envelopes_from_servicebus_batch(batch, reread=Reread({100: Envelope()}))


def test_metadata_without_expiry_times_is_re_read_rather_than_trusted() -> None:
    batch = servicebus_batch(1)
    metadata = dict(batch[0].metadata)
    del metadata["ExpiresAtArray"]
    batch = [Delivered(b"x", metadata)]
    assert reread_reasons(metadata, 1) == ["the batch metadata has no expiry times"]
    complete = {100: Envelope(message_id="m-0", time_to_live=timedelta(minutes=1))}
    (envelope,) = envelopes_from_servicebus_batch(batch, reread=Reread(complete))
    assert envelope.time_to_live == timedelta(minutes=1)


def test_an_array_that_must_be_complete_but_is_not_fails() -> None:
    batch = servicebus_batch(2, SequenceNumberArray=[100])
    with pytest.raises(TriggerMetadataError, match="SequenceNumberArray: expected 2 entries"):
        envelopes_from_servicebus_batch(batch)


def test_dead_letter_reason_comes_from_the_application_properties() -> None:
    properties = [
        {"DeadLetterReason": "MaxDeliveryCountExceeded", "DeadLetterErrorDescription": "x"}
    ]
    batch = servicebus_batch(1, ApplicationPropertiesArray=properties)
    (envelope,) = envelopes_from_servicebus_batch(batch)
    assert envelope.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert envelope.dead_letter_error_description == "x"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00.2500000+00:00", datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)),
        ("2024-05-01T12:00:00.25", datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)),
        ("2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T12:00:00.1234567Z", datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_host_times_without_a_zone_are_utc(text: str, expected: datetime) -> None:
    assert parse_host_time(text) == expected


def event_hub_batch(system: list[dict[str, Any]], partition: str = "3") -> list[Delivered]:
    metadata = {
        "SystemPropertiesArray": system,
        "PropertiesArray": [{"unit": "C"} for _ in system],
        # Shortened by the host when a key is missing: never read by the converter.
        "PartitionKeyArray": [s["PartitionKey"] for s in system if s.get("PartitionKey")],
        "PartitionContext": {"EventHubName": "devices", "PartitionId": partition},
    }
    return [Delivered(f"{n}".encode(), metadata) for n in range(len(system))]


def _system(sequence: int, offset: str, **extra: Any) -> dict[str, Any]:
    numeric = offset.isdigit()
    return {
        "SequenceNumber": sequence,
        "Offset": int(offset) if numeric else -1,
        "OffsetString": offset,
        "PartitionKey": extra.pop("PartitionKey", None),
        "EnqueuedTimeUtc": "2024-05-01T12:00:00.25",
        "x-opt-enqueued-time": ENQUEUED,
        **extra,
    }


def test_event_fields_come_from_each_events_system_properties() -> None:
    batch = event_hub_batch(
        [
            _system(
                17,
                "4096",
                **{
                    "message-id": "evt-1",
                    "correlation-id": "c-9",
                    "content-type": "application/json",
                    "subject": "reading",
                    "to": "telemetry",
                    "reply-to": "commands",
                },
            ),
            _system(18, "4160", PartitionKey="device-7"),
        ]
    )
    first, second = envelopes_from_event_hub_batch(batch, source="ingest/devices")
    assert (first.message_id, first.correlation_id, first.content_type) == (
        "evt-1",
        "c-9",
        "application/json",
    )
    assert (first.subject, first.to, first.reply_to) == ("reading", "telemetry", "commands")
    assert first.partition_key is None
    assert second.partition_key == "device-7"
    assert (second.sequence_number, second.offset, second.partition_id) == (18, "4160", "3")
    assert second.enqueued_time_utc == datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert dict(second.application_properties) == {"unit": "C"}


def test_events_of_a_geo_replicated_namespace_get_distinct_stable_message_ids() -> None:
    """Offset is -1 for every event there; the sequence number stays unique per partition."""
    batch = event_hub_batch([_system(5, "g1:0:5"), _system(6, "g1:64:6")])
    envelopes = envelopes_from_event_hub_batch(batch, source="ingest/devices")
    assert [e.offset for e in envelopes] == ["g1:0:5", "g1:64:6"]
    ids = [to_servicebus_message(e).message_id for e in envelopes]
    assert ids == ["ingest/devices/3/5", "ingest/devices/3/6"]
    # The same event delivered again gets the same id (duplicate detection drops it).
    again = envelopes_from_event_hub_batch(batch, source="ingest/devices")
    assert [to_servicebus_message(e).message_id for e in again] == ids


def test_event_message_ids_differ_across_partitions_and_hubs() -> None:
    ids = {
        to_servicebus_message(
            Envelope(offset="0", sequence_number=0, partition_id=p, source=source)
        ).message_id
        for p in ("0", "1")
        for source in ("weu/devices", "eus/devices")
    }
    assert len(ids) == 4


def test_a_too_long_event_message_id_becomes_a_stable_uuid() -> None:
    envelope = Envelope(offset="0", sequence_number=7, partition_id="0", source="n/" + "h" * 200)
    first = to_servicebus_message(envelope).message_id
    assert first is not None
    assert len(first) <= MAX_MESSAGE_ID_LENGTH
    assert to_servicebus_message(envelope).message_id == first


def test_event_to_servicebus_uses_the_partition_key_as_session() -> None:
    (event,) = envelopes_from_event_hub_batch(event_hub_batch([_system(1, "0", PartitionKey="k")]))
    message = to_servicebus_message(event)
    assert (message.session_id, message.partition_key) == ("k", "k")


def test_event_envelope_to_event_data_keeps_properties_and_ids() -> None:
    batch = event_hub_batch(
        [_system(1, "0", **{"message-id": "evt-1", "subject": "s", "to": "t", "reply-to": "r"})]
    )
    (envelope,) = envelopes_from_event_hub_batch(batch)
    event = to_event_data(envelope)
    assert event.message_id == "evt-1"
    assert event.properties == {"unit": "C"}
    amqp = event.raw_amqp_message.properties
    assert amqp is not None
    assert (amqp.subject, amqp.to, amqp.reply_to) == ("s", "t", "r")


def test_an_event_that_cannot_be_converted_is_set_aside_for_parking() -> None:
    """A property no replica can carry (a map: the host sends it as a JSON object) makes one
    event unreadable, not the batch: the caller parks it and the checkpoint moves on."""
    batch = event_hub_batch([_system(1, "10"), _system(2, "20"), _system(3, "30")])
    metadata = dict(batch[0].metadata)
    metadata["PropertiesArray"] = [{"unit": "C"}, {"eid": "e-2", "p": {"nested": 1}}, {"unit": "F"}]
    batch = [Delivered(event.body, metadata) for event in batch]
    unreadable: list[DeadLetter] = []
    envelopes = envelopes_from_event_hub_batch(
        batch, source="ingest/devices", unreadable=unreadable
    )
    assert [e.sequence_number for e in envelopes] == [1, 3]
    (parked,) = unreadable
    assert (parked.source.sequence_number, parked.source.body) == (2, b"1")
    assert parked.reason == "UnsupportedApplicationProperty"
    # Everything that converts is kept, and the copy says what is missing (issue 20).
    salvaged = parked.source
    assert (salvaged.offset, salvaged.partition_id, salvaged.source) == (
        "20",
        "3",
        "ingest/devices",
    )
    assert salvaged.enqueued_time_utc == datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert salvaged.application_properties["eid"] == "e-2"
    assert "'p'" in salvaged.application_properties[DEAD_LETTER_PROPERTIES_OMITTED]
    assert "p" not in salvaged.application_properties
    with pytest.raises(MessageRejectedError):
        envelopes_from_event_hub_batch(batch, source="ingest/devices")


def test_a_servicebus_message_that_cannot_be_converted_is_set_aside_for_parking() -> None:
    properties = [{"n": 0}, {"n": 1, "p": [1, 2]}, {"n": 2}]
    batch = servicebus_batch(3, ApplicationPropertiesArray=properties)
    unreadable: list[DeadLetter] = []
    envelopes = envelopes_from_servicebus_batch(batch, unreadable=unreadable)
    assert [e.message_id for e in envelopes] == ["m-0", "m-2"]
    assert [d.source.sequence_number for d in unreadable] == [101]
    (salvaged,) = [d.source for d in unreadable]
    assert (salvaged.message_id, salvaged.body) == ("m-1", b"body 1")
    assert salvaged.application_properties["n"] == 1
    assert "'p'" in salvaged.application_properties[DEAD_LETTER_PROPERTIES_OMITTED]
