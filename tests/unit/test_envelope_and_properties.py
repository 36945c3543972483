"""Envelope construction and immutability; replication properties as the .NET library
writes them."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replication.envelope import MESSAGE_FIELDS, Envelope
from replication.exceptions import MalformedReplicationPropertyError
from replication.properties import (
    REPL_ENQUEUE_TIME_DOCS_SPELLING,
    REPL_ENQUEUED_TIME,
    REPL_HOPS,
    REPL_OFFSET,
    REPL_ORIGIN,
    REPL_PATH,
    REPL_SEQUENCE,
    REPLICATION_FLAG,
    format_timestamp,
    read_state,
    source_enqueued_times,
    stamp,
)


def test_envelope_is_built_by_keyword_and_immutable() -> None:
    envelope = Envelope(body=b"x", message_id="1", application_properties={"a": 1})
    assert envelope.application_properties == {"a": 1}
    with pytest.raises(AttributeError):
        envelope.message_id = "2"  # type: ignore[misc]
    with pytest.raises(TypeError):
        envelope.application_properties["a"] = 2  # type: ignore[index]


def test_envelope_rejects_non_string_property_keys() -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        Envelope(application_properties={b"k": 1})  # type: ignore[dict-item]


def test_envelope_pickles_and_compares_by_value() -> None:
    envelope = Envelope(body=b"x", message_id="1", application_properties={"a": [1]})
    assert pickle.loads(pickle.dumps(envelope)) == envelope


def test_with_properties_returns_a_copy() -> None:
    envelope = Envelope(application_properties={"a": 1, "b": 2})
    changed = envelope.with_properties({"c": 3}, remove=("a",))
    assert changed.application_properties == {"b": 2, "c": 3}
    assert envelope.application_properties == {"a": 1, "b": 2}


def test_with_properties_keeps_every_other_field() -> None:
    """The copy sets the fields itself (faster than dataclasses.replace): it must equal what
    dataclasses.replace makes, a field added to Envelope included."""
    values = {
        field.name: f"value of {field.name}"
        for field in dataclasses.fields(Envelope)
        if field.name not in ("body", "application_properties")
    }
    envelope = Envelope(body=b"x", application_properties={"a": 1}, **values)  # type: ignore[arg-type]
    changed = envelope.with_properties({"b": 2})
    assert changed == dataclasses.replace(envelope, application_properties={"a": 1, "b": 2})
    assert type(changed.application_properties).__name__ == "mappingproxy"
    with pytest.raises(AttributeError):
        changed.body = b"y"  # type: ignore[misc]


def _received(**fields: object) -> Envelope:
    return Envelope(
        body=b"x",
        message_id="m",
        enqueued_time_utc=datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC),
        sequence_number=7,
        **fields,  # type: ignore[arg-type]
    )


def test_first_hop_stamps_origin_path_hops_and_source_facts() -> None:
    replica = stamp(
        _received(application_properties={REPLICATION_FLAG: 1}),
        source_namespace="weu",
        target_namespace="neu",
    )
    assert dict(replica.application_properties) == {
        REPLICATION_FLAG: 1,
        REPL_ORIGIN: "weu",
        REPL_PATH: "weu;neu",
        REPL_HOPS: 1,
        REPL_ENQUEUED_TIME: "2024-05-01T12:00:00.250Z",
        REPL_SEQUENCE: "7",
        REPL_OFFSET: "7",
    }


def test_second_hop_appends_and_keeps_the_origin() -> None:
    first = stamp(_received(), source_namespace="weu", target_namespace="neu")
    at_neu = first.replace(
        enqueued_time_utc=datetime(2024, 5, 1, 12, 0, 1, tzinfo=UTC),
        sequence_number=3,
        offset="1024",
    )
    second = stamp(at_neu, source_namespace="neu", target_namespace="eus")
    properties = second.application_properties
    assert properties[REPL_ORIGIN] == "weu"
    assert properties[REPL_PATH] == "weu;neu;eus"
    assert properties[REPL_HOPS] == 2
    assert properties[REPL_ENQUEUED_TIME] == "2024-05-01T12:00:00.250Z;2024-05-01T12:00:01.000Z"
    assert properties[REPL_SEQUENCE] == "7;3"
    assert properties[REPL_OFFSET] == "7;1024"
    assert source_enqueued_times(properties) == (
        "2024-05-01T12:00:00.250Z",
        "2024-05-01T12:00:01.000Z",
    )


def test_docs_spelling_of_enqueue_time_is_read_and_continued() -> None:
    envelope = _received(
        application_properties={REPL_ENQUEUE_TIME_DOCS_SPELLING: "2024-01-01T00:00:00.000Z"}
    )
    assert source_enqueued_times(envelope.application_properties) == ("2024-01-01T00:00:00.000Z",)
    replica = stamp(envelope, source_namespace="a", target_namespace="b")
    assert replica.application_properties[REPL_ENQUEUED_TIME] == (
        "2024-01-01T00:00:00.000Z;2024-05-01T12:00:00.250Z"
    )


def test_bytes_values_from_other_writers_are_read() -> None:
    state = read_state({REPL_ORIGIN: b"weu", REPL_PATH: b"weu;neu", REPL_HOPS: b"1"})
    assert (state.origin, state.path, state.hops) == ("weu", ("weu", "neu"), 1)
    assert state.visited == {"weu", "neu"}


@pytest.mark.parametrize("value", ["two", -1, True, "1.5"])
def test_malformed_hops_are_rejected_with_a_reason(value: object) -> None:
    with pytest.raises(MalformedReplicationPropertyError) as caught:
        read_state({REPL_HOPS: value})
    assert caught.value.reason == "MalformedReplicationProperty"


def test_repl_target_marks_a_replica() -> None:
    state = read_state({"repl-target": "hub-b"})
    assert state.is_replica
    assert "hub-b" in state.visited


def test_timestamps_are_utc_with_milliseconds() -> None:
    naive = datetime(2024, 5, 1, 12, 0, 0, 999999)
    assert format_timestamp(naive) == "2024-05-01T12:00:00.999Z"


@given(
    st.datetimes(
        min_value=datetime(2, 1, 1),
        max_value=datetime(9998, 12, 31),
        timezones=st.one_of(st.none(), st.timezones()),
    )
)
def test_timestamps_read_as_strftime_writes_them(moment: datetime) -> None:
    """format_timestamp takes a faster route than strftime; the text must be strftime's."""
    utc = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(UTC)
    expected = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    assert format_timestamp(moment) == expected


def test_message_fields_are_every_writable_field_but_body_and_properties() -> None:
    """Converters and replica comparisons iterate MESSAGE_FIELDS: it must not miss a field."""
    names = [f.name for f in dataclasses.fields(Envelope)]
    writable = names[names.index("body") + 1 : names.index("application_properties")]
    assert list(MESSAGE_FIELDS) == writable
