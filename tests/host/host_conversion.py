"""A batch trigger's input data and trigger metadata, built the way the Functions host builds them.

No local stand-in for the Functions host (a .NET process) can run here, so this module follows
its source, step by step, from the messages the emulator delivered to an SDK receiver:

1. The extension's view of each message: the .NET SDK's ``ServiceBusReceivedMessage`` /
   ``EventData`` getters (Azure/azure-sdk-for-net, ``Azure.Messaging.ServiceBus`` 7.x
   ``Primitives/ServiceBusReceivedMessage.cs``: ``ExpiresAt`` is ``AbsoluteExpiryTime`` when the
   sender wrote one, else ``EnqueuedTime + TimeToLive``, else ``DateTimeOffset.MaxValue``;
   ``DeadLetterReason`` is an application property. ``Azure.Messaging.EventHubs``
   ``Amqp/AmqpSystemProperties.cs``: the properties section's set fields plus every message
   annotation).
2. The binding data of a batch: Service Bus extension 5.x
   ``ServiceBusTriggerBindingStrategy.GetBindingData`` / ``AddBindingData(messages[])`` and
   Event Hubs extension 6.5+ ``EventHubTriggerBindingStrategy.AddBindingData(events[])`` /
   ``GetSystemPropertiesForBinding`` (``Offset`` is -1 when ``OffsetString`` is not a number,
   as on a geo-replicated namespace). .NET types are kept: ``string[]``, ``long[]``,
   ``int[]``, ``DateTime[]`` (``.DateTime`` of a ``DateTimeOffset``: no kind), ``DateTimeOffset[]``,
   dictionaries.
3. The trigger input with ``dataType: binary`` and ``cardinality: many``: ``byte[][]`` (host,
   ``GeneralScriptBindingProvider.GetRequestedType``).
4. The RPC conversion: host 4.x ``ScriptInvocationContextExtensions.ToRpcInvocationRequest``
   (binding data with a null value and the ``sys`` entry are skipped) and
   ``GrpcMessageConversionExtensions.ToRpc``: ``byte[]`` -> bytes, ``string`` -> string,
   ``double`` -> double, with the worker's ``TypedDataCollection`` capability ``byte[][]`` ->
   collection_bytes (null entries dropped), ``string[]`` -> collection_string (null AND empty
   entries dropped unless the worker advertises ``IncludeEmptyEntriesInMessagePayload``),
   ``long[]`` -> collection_sint64, ``double[]`` -> collection_double; anything else
   (``int``, ``long``, ``int[]``, dates, dictionaries, objects) -> ``JsonConvert.SerializeObject``
   with Json.NET's defaults (:func:`json_net`).

The capabilities are the ones the worker under test answered in its ``WorkerInitResponse``.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from tests.host.rpc import protos

TYPED_DATA_COLLECTION = "TypedDataCollection"
INCLUDE_EMPTY_ENTRIES = "IncludeEmptyEntriesInMessagePayload"


# --- .NET values -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NetDateTime:
    """A .NET ``DateTime``; ``moment`` None is ``DateTime.MaxValue``."""

    moment: datetime | None
    kind: Literal["Utc", "Unspecified"] = "Unspecified"


@dataclass(frozen=True)
class NetDateTimeOffset:
    """A .NET ``DateTimeOffset`` at offset zero; ``moment`` None is ``DateTimeOffset.MaxValue``."""

    moment: datetime | None


@dataclass(frozen=True)
class NetArray:
    """A .NET array whose element type decides its RPC conversion."""

    element: Literal[
        "byte[]", "string", "long", "int", "double", "DateTime", "DateTimeOffset", "dict"
    ]
    values: tuple[Any, ...]


@dataclass(frozen=True)
class NetObject:
    """A .NET object serialized by Json.NET as its public properties (``MessageActions`` ...)."""

    properties: Mapping[str, Any]


def _ticks_text(moment: datetime | None) -> str:
    # Json.NET's default DateFormatString "yyyy'-'MM'-'dd'T'HH':'mm':'ss.FFFFFFFK": up to seven
    # fraction digits, trailing zeros (and the dot) dropped.
    if moment is None:
        return "9999-12-31T23:59:59.9999999"
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}0".rstrip("0")
    return f"{text}.{fraction}" if fraction else text


def _double_text(value: float) -> str:
    # JsonConvert.ToString(double): round-trip format, ".0" appended to integral values.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value).replace("e", "E")
    if "E" in text and "." not in text.split("E")[0]:
        mantissa, exponent = text.split("E")
        text = f"{mantissa}.0E{exponent}"
    return text if ("." in text or "E" in text) else f"{text}.0"


def _timespan_text(value: timedelta) -> str:
    # TimeSpan.ToString() ("c"): [-][d.]hh:mm:ss[.fffffff]
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    if value.days:
        text = f"{value.days}.{text}"
    if value.microseconds:
        text += f".{value.microseconds:06d}0"
    return sign + text


def json_net(value: Any) -> str:
    """``JsonConvert.SerializeObject(value, Formatting.None)`` with Json.NET's defaults."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, NetDateTime):
        suffix = "Z" if value.kind == "Utc" and value.moment is not None else ""
        return f'"{_ticks_text(value.moment)}{suffix}"'
    if isinstance(value, NetDateTimeOffset):
        return f'"{_ticks_text(value.moment)}+00:00"'
    if isinstance(value, uuid.UUID):
        return f'"{value}"'
    if isinstance(value, bytes):
        return f'"{base64.b64encode(value).decode()}"'
    if isinstance(value, timedelta):
        return f'"{_timespan_text(value)}"'
    if isinstance(value, NetObject):
        return json_net(dict(value.properties))
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json_net(str(k))}:{json_net(v)}" for k, v in value.items()) + "}"
    if isinstance(value, NetArray):
        return json_net(list(value.values))
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_net(item) for item in value) + "]"
    raise TypeError(f"no Json.NET rendering for {type(value).__name__}")


def to_rpc(value: Any, worker_capabilities: Mapping[str, str]) -> Any:
    """``GrpcMessageConversionExtensions.ToRpc`` for the value kinds trigger bindings produce."""
    collections = bool(worker_capabilities.get(TYPED_DATA_COLLECTION))
    include_empty = bool((worker_capabilities.get(INCLUDE_EMPTY_ENTRIES) or "").strip())
    if value is None:
        return protos.TypedData()
    if isinstance(value, bytes):
        return protos.TypedData(bytes=value)
    if isinstance(value, str):
        return protos.TypedData(string=value)
    if isinstance(value, float):
        return protos.TypedData(double=value)
    if isinstance(value, NetArray) and collections:
        if value.element == "byte[]":
            kept = [item for item in value.values if item is not None]
            return protos.TypedData(collection_bytes=protos.CollectionBytes(bytes=kept))
        if value.element == "string":
            strings = [
                item or "" for item in value.values if include_empty or item not in (None, "")
            ]
            return protos.TypedData(collection_string=protos.CollectionString(string=strings))
        if value.element == "long":
            return protos.TypedData(
                collection_sint64=protos.CollectionSInt64(sint64=list(value.values))
            )
        if value.element == "double":
            return protos.TypedData(
                collection_double=protos.CollectionDouble(double=list(value.values))
            )
    return protos.TypedData(json=json_net(value))


def rpc_metadata(
    binding_data: Mapping[str, Any], worker_capabilities: Mapping[str, str]
) -> dict[str, Any]:
    """``InvocationRequest.trigger_metadata``: null values and ``sys`` skipped."""
    return {
        key: to_rpc(value, worker_capabilities)
        for key, value in binding_data.items()
        if value is not None and key.lower() != "sys"
    }


class UnboundBodyError(AssertionError):
    """The host cannot bind these bodies for this trigger (what a deployed app would see)."""


def rpc_bodies(
    trigger: Mapping[str, Any], bodies: Sequence[bytes], worker_capabilities: Mapping[str, str]
) -> Any:
    """The trigger input of a batch, by the binding's ``dataType`` (host,
    ``GeneralScriptBindingProvider.GetRequestedType``): ``binary`` -> ``byte[][]``, ``string`` ->
    ``string[]`` (UTF-8 decoded, then converted like any string array). Without a data type the
    host asks the extension for ``object[]`` and binds each body as JSON: bodies are parsed and
    re-serialized, and a body that is not JSON cannot be bound at all (azure-webjobs-sdk#1830).
    """
    data_type = str(trigger.get("dataType") or "").lower()
    if data_type == "binary":
        return to_rpc(NetArray("byte[]", tuple(bodies)), worker_capabilities)
    if data_type == "string":
        texts = tuple(body.decode("utf-8") for body in bodies)
        return to_rpc(NetArray("string", texts), worker_capabilities)
    raise UnboundBodyError(
        f"trigger {trigger.get('name')!r} declares no dataType: the host binds the bodies as "
        "JSON, re-serializing JSON bodies and failing on any other body"
    )


# --- Service Bus ------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8")
    return str(value)


def _ms(value: Any) -> datetime | None:
    # pyamqp decodes AMQP timestamps as milliseconds since the epoch (or datetime, by version).
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


def _dotnet_property(value: Any) -> Any:
    """An application property as the .NET SDK hands it to the extension (AMQP type kept)."""
    if isinstance(value, bytes):
        # The Python SDK decodes AMQP strings as bytes; the senders of these tests only send
        # strings, so every bytes value was a .NET string.
        return value.decode("utf-8")
    if isinstance(value, datetime):
        return NetDateTime(value.astimezone(UTC), "Utc")
    return value


@dataclass(frozen=True)
class ServiceBusView:
    """What ``Azure.Messaging.ServiceBus.ServiceBusReceivedMessage`` reports for one message."""

    body: bytes
    message_id: str | None
    correlation_id: str | None
    content_type: str | None
    reply_to: str | None
    to: str | None
    subject: str | None
    session_id: str | None
    reply_to_session_id: str | None
    partition_key: str | None
    transaction_partition_key: str | None
    application_properties: dict[str, Any]
    delivery_count: int
    dead_letter_source: str | None
    lock_token: str
    sequence_number: int
    enqueued_time: datetime
    expires_at: datetime | None  # None: DateTimeOffset.MaxValue

    @classmethod
    def of(cls, message: Any) -> ServiceBusView:
        """The .NET view of a message received with the Python SDK.

        The Python SDK decodes an AMQP timestamp as an int and a string as bytes; the tests
        publish no timestamp or binary application properties, so the .NET types are known.
        """
        amqp = message.raw_amqp_message
        annotations = {_text(k): v for k, v in (amqp.annotations or {}).items()}
        properties = amqp.properties
        enqueued = _ms(annotations.get("x-opt-enqueued-time"))
        assert enqueued is not None
        absolute_expiry = _ms(getattr(properties, "absolute_expiry_time", None))
        ttl_ms = amqp.header.time_to_live if amqp.header is not None else None
        if absolute_expiry is not None:
            expires_at: datetime | None = absolute_expiry
        elif ttl_ms:
            expires_at = enqueued + timedelta(milliseconds=ttl_ms)
        else:
            expires_at = None
        application = {
            _text(key) or "": _dotnet_property(value)
            for key, value in (message.application_properties or {}).items()
        }
        return cls(
            body=b"".join(message.body) if not isinstance(message.body, bytes) else message.body,
            message_id=_text(message.message_id),
            correlation_id=_text(message.correlation_id),
            content_type=_text(message.content_type),
            reply_to=_text(message.reply_to),
            to=_text(message.to),
            subject=_text(message.subject),
            session_id=_text(message.session_id),
            reply_to_session_id=_text(message.reply_to_session_id),
            partition_key=_text(annotations.get("x-opt-partition-key")),
            transaction_partition_key=_text(annotations.get("x-opt-via-partition-key")),
            application_properties=application,
            # AmqpMessageConverter adds one to the AMQP delivery-count of a received message.
            delivery_count=int(message.delivery_count or 0) + 1,
            dead_letter_source=_text(annotations.get("x-opt-deadletter-source")),
            lock_token=str(message.lock_token),
            sequence_number=int(annotations["x-opt-sequence-number"]),
            enqueued_time=enqueued,
            expires_at=expires_at,
        )


def servicebus_binding_data(
    views: Sequence[ServiceBusView], *, fully_qualified_namespace: str
) -> dict[str, Any]:
    """``ServiceBusTriggerBindingStrategy.GetBindingData`` of a batch (extension 5.x)."""

    def strings(field: str) -> NetArray:
        return NetArray("string", tuple(getattr(view, field) for view in views))

    actions = NetObject({})  # ServiceBusMessageActions has no public properties.
    client = NetObject(
        {
            "FullyQualifiedNamespace": fully_qualified_namespace,
            "IsClosed": False,
            "TransportType": 0,
            "Identifier": f"{fully_qualified_namespace}-{uuid.uuid4()}",
        }
    )
    subjects = strings("subject")
    properties = NetArray("dict", tuple(view.application_properties for view in views))
    return {
        "MessageReceiver": actions,
        "MessageSession": actions,
        "MessageActions": actions,
        "SessionActions": actions,
        "ReceiveActions": NetObject({}),
        "Client": client,
        "DeliveryCountArray": NetArray("int", tuple(view.delivery_count for view in views)),
        "DeadLetterSourceArray": strings("dead_letter_source"),
        "LockTokenArray": strings("lock_token"),
        "ExpiresAtUtcArray": NetArray(
            "DateTime", tuple(NetDateTime(view.expires_at) for view in views)
        ),
        "ExpiresAtArray": NetArray(
            "DateTimeOffset", tuple(NetDateTimeOffset(view.expires_at) for view in views)
        ),
        "EnqueuedTimeUtcArray": NetArray(
            "DateTime", tuple(NetDateTime(view.enqueued_time) for view in views)
        ),
        "EnqueuedTimeArray": NetArray(
            "DateTimeOffset", tuple(NetDateTimeOffset(view.enqueued_time) for view in views)
        ),
        "MessageIdArray": strings("message_id"),
        "ContentTypeArray": strings("content_type"),
        "ReplyToArray": strings("reply_to"),
        "SequenceNumberArray": NetArray("long", tuple(view.sequence_number for view in views)),
        "ToArray": strings("to"),
        "SubjectArray": subjects,
        "LabelArray": subjects,
        "CorrelationIdArray": strings("correlation_id"),
        "ApplicationPropertiesArray": properties,
        "UserPropertiesArray": properties,
        "SessionIdArray": strings("session_id"),
        "ReplyToSessionIdArray": strings("reply_to_session_id"),
        "PartitionKeyArray": strings("partition_key"),
        # The extension adds the partition keys here too (its AddBindingData, as published).
        "TransactionPartitionKeyArray": strings("partition_key"),
    }


# --- Event Hubs -------------------------------------------------------------------------------

_PROPERTY_SECTION = (
    ("message-id", "message_id"),
    ("user-id", "user_id"),
    ("to", "to"),
    ("subject", "subject"),
    ("reply-to", "reply_to"),
    ("correlation-id", "correlation_id"),
    ("content-type", "content_type"),
    ("content-encoding", "content_encoding"),
    ("absolute-expiry-time", "absolute_expiry_time"),
    ("creation-time", "creation_time"),
    ("group-id", "group_id"),
    ("group-sequence", "group_sequence"),
    ("reply-to-group-id", "reply_to_group_id"),
)


@dataclass(frozen=True)
class EventView:
    """What ``Azure.Messaging.EventHubs.EventData`` reports for one event."""

    body: bytes
    properties: dict[str, Any]
    system_properties: dict[str, Any]
    partition_key: str | None
    offset_string: str
    sequence_number: int
    enqueued_time: datetime

    @classmethod
    def of(cls, event: Any, *, geo_replicated: bool = False) -> EventView:
        """The .NET view of an event received with the Python SDK.

        With ``geo_replicated``, the offset is given the opaque string form a geo-replicated
        namespace reports (the local emulator has only numeric offsets), so that ``Offset``
        becomes -1 as the extension reports it there.
        """
        amqp = event.raw_amqp_message
        annotations = {_text(k): v for k, v in (amqp.annotations or {}).items()}
        system: dict[str, Any] = {}
        name: str | None
        section = amqp.properties
        for name, attribute in _PROPERTY_SECTION:
            value = getattr(section, attribute, None) if section is not None else None
            if value is None:
                continue
            if name in ("absolute-expiry-time", "creation-time"):
                system[name] = NetDateTime(_ms(value), "Utc")
            elif name == "user-id":
                system[name] = bytes(value)
            else:
                system[name] = _text(value)
        enqueued = _ms(annotations.get("x-opt-enqueued-time"))
        assert enqueued is not None
        offset_string = _text(annotations.get("x-opt-offset")) or ""
        if geo_replicated:
            offset_string = f"g1:{offset_string}:{annotations.get('x-opt-sequence-number')}"
        for name, value in annotations.items():
            assert name is not None
            if name == "x-opt-enqueued-time":
                system[name] = NetDateTimeOffset(enqueued)  # GetMessageAnnotationNormalizedValue
            elif name == "x-opt-offset":
                system[name] = offset_string
            else:
                system[name] = _text(value) if isinstance(value, bytes | memoryview) else value
        body = event.body if isinstance(event.body, bytes) else b"".join(event.body)
        return cls(
            body=body,
            properties={
                _text(k) or "": _dotnet_property(v) for k, v in (event.properties or {}).items()
            },
            system_properties=system,
            partition_key=_text(annotations.get("x-opt-partition-key")),
            offset_string=offset_string,
            sequence_number=int(annotations["x-opt-sequence-number"]),
            enqueued_time=enqueued,
        )

    @property
    def offset(self) -> int:
        """``long.TryParse(OffsetString)`` or -1, as the extension computes ``Offset``."""
        try:
            return int(self.offset_string)
        except ValueError:
            return -1


def event_hub_binding_data(
    views: Sequence[EventView],
    *,
    fully_qualified_namespace: str,
    event_hub: str,
    consumer_group: str,
    partition_id: str,
) -> dict[str, Any]:
    """``EventHubTriggerBindingStrategy.GetBindingData`` of a batch (extension 6.5+)."""
    context = NetObject(
        {
            "IsCheckpointingAfterInvocation": True,
            "FullyQualifiedNamespace": fully_qualified_namespace,
            "EventHubName": event_hub,
            "ConsumerGroup": consumer_group,
            "PartitionId": partition_id,
        }
    )
    system = []
    for view in views:
        entry = dict(view.system_properties)
        entry["SequenceNumber"] = view.sequence_number
        entry["Offset"] = view.offset
        entry["OffsetString"] = view.offset_string
        entry["PartitionKey"] = view.partition_key
        entry["EnqueuedTimeUtc"] = NetDateTime(view.enqueued_time)
        system.append(entry)
    return {
        "TriggerPartitionContext": context,
        "PartitionContext": context,
        "PartitionKeyArray": NetArray("string", tuple(view.partition_key for view in views)),
        "OffsetArray": NetArray("string", tuple(str(view.offset) for view in views)),
        "OffsetStringArray": NetArray("string", tuple(view.offset_string for view in views)),
        "SequenceNumberArray": NetArray("long", tuple(view.sequence_number for view in views)),
        "EnqueuedTimeUtcArray": NetArray(
            "DateTime", tuple(NetDateTime(view.enqueued_time) for view in views)
        ),
        "PropertiesArray": NetArray("dict", tuple(view.properties for view in views)),
        "SystemPropertiesArray": NetArray("dict", tuple(system)),
    }


__all__ = [
    "EventView",
    "NetArray",
    "NetDateTime",
    "NetDateTimeOffset",
    "NetObject",
    "ServiceBusView",
    "UnboundBodyError",
    "event_hub_binding_data",
    "json_net",
    "rpc_bodies",
    "rpc_metadata",
    "servicebus_binding_data",
    "to_rpc",
]
