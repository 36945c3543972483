"""Application-property values between the SDKs' AMQP codec and the envelope, both ways.

What the SDKs (azure-servicebus 7.15.0, azure-eventhub 5.15.1: the same ``_pyamqp`` codec) do,
read from their ``_decode.py`` / ``_encode.py`` and checked over the wire in
``tests/e2e/test_property_types.py``:

- **Receiving**, every integer type (ubyte, ushort, uint, ulong, byte, short, int, long) becomes a
  Python ``int`` and so does a timestamp (milliseconds since the epoch); float and double become
  ``float``; string, symbol and binary all become ``bytes``. The original AMQP type is gone
  before any caller sees the value, so a replica cannot restore it: :func:`decode_properties`
  turns UTF-8 bytes into ``str`` and keeps other bytes as ``bytes``.
- **Sending**, the Service Bus SDK decodes every ``bytes`` value as UTF-8 before encoding (a
  binary value becomes a string, and one that is not UTF-8 raises ``UnicodeDecodeError``), and
  both SDKs encode a Python ``int`` as a 32-bit int (larger values raise ``ValueError``).
  Both encoders also accept an explicitly typed value, ``{"TYPE": <AMQPTypes name>, "VALUE": v}``,
  and :func:`sdk_properties` uses that for what the default would break: integers beyond 32 bits
  go as long (or ulong above 2^63 - 1) and bytes go as binary.

Values this library refuses, with :class:`UnsupportedPropertyError` (the message is
dead-lettered with its reason instead of stopping the receive loop or failing every send):
maps, lists and arrays (AMQP allows only simple types in application properties, and a Service
Bus SQL filter cannot read them), keys that are not UTF-8, integers outside the 64-bit ranges, and
decimals that are not finite (the SDK's decimal128 encoder cannot write them).

Values the SDK cannot decode at all (char, decimal32, decimal64, decimal128) never reach this
module: the receive call itself fails, see :mod:`replication.transport.servicebus` (``_loops``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from azure.servicebus._pyamqp.types import TYPE, VALUE, AMQPTypes

from replication.envelope import PropertyUpdate
from replication.exceptions import UnsupportedPropertyError

INT32 = range(-(2**31), 2**31)
INT64 = range(-(2**63), 2**63)
UINT64 = range(0, 2**64)

_SIMPLE = (str, bool, int, float, uuid.UUID, datetime, Decimal, bytes)
_PLAIN = frozenset({str, bool, int, float, type(None)})
"""Received value types that :func:`decode_properties` keeps unchanged (exact types only)."""
_AS_IS = frozenset({str, bool, float, type(None)})
"""Value types :func:`sdk_properties` passes through unchanged (exact types only; every int
needs its range checked)."""


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes | bytearray | memoryview):
        try:
            return bytes(key).decode("utf-8")
        except UnicodeDecodeError:
            raise UnsupportedPropertyError(
                f"application property name {bytes(key)!r} is not UTF-8"
            ) from None
    raise UnsupportedPropertyError(
        f"application property name {key!r} is a {type(key).__name__}, not a string"
    )


def _value(key: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            # The SDKs decode AMQP strings as bytes; binary values that are not UTF-8 stay bytes.
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    if not isinstance(value, _SIMPLE):
        raise UnsupportedPropertyError(
            f"application property {key!r} is a {type(value).__name__}; only simple AMQP "
            "types (no maps, lists or arrays) can be replicated"
        )
    return value


def decode_properties(properties: Mapping[Any, Any] | None) -> dict[str, Any]:
    """Application properties with str keys and str (not bytes) string values.

    Raises:
        UnsupportedPropertyError: a key is not UTF-8 text, or a value is a map, list or array.
    """
    if not properties:
        return {}
    decoded: dict[str, Any] = {}
    for key, value in properties.items():
        # The common cases first, with the results _key and _value give them: keys and text
        # values as JSON gives them (str, the Functions host) or as the SDKs deliver them (UTF-8
        # bytes), numbers, booleans and nulls as they are. Everything else, and every error,
        # goes through them.
        if type(key) is str:
            name = key
        elif type(key) is bytes and key.isascii():
            name = key.decode("ascii")
        else:
            name = _key(key)
        kind = type(value)
        if kind in _PLAIN:
            decoded[name] = value
        elif kind is bytes and value.isascii():
            decoded[name] = value.decode("ascii")
        else:
            decoded[name] = _value(name, value)
    return decoded


def salvage_properties(properties: Mapping[Any, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """The application properties that convert (as :func:`decode_properties` converts them),
    and for each one that does not, its name and why: what a parked copy of a message that
    cannot be replicated keeps (nothing that converts is dropped with the rest)."""
    kept: dict[str, Any] = {}
    omitted: list[str] = []
    for key, value in (properties or {}).items():
        try:
            name = _key(key)
        except UnsupportedPropertyError as error:
            omitted.append(str(error))
            continue
        try:
            kept[name] = _value(name, value)
        except UnsupportedPropertyError as error:
            omitted.append(str(error))
    return kept, omitted


def _typed(key: str, value: Any) -> Any:
    """``value`` as the SDK encoders must get it to send it with an AMQP type that can hold it."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        number = int(value)  # DescribedInt and other int subclasses: the plain value
        if number in INT32:
            return number
        if number in INT64:
            return {TYPE: AMQPTypes.long, VALUE: number}
        if number in UINT64:
            return {TYPE: AMQPTypes.ulong, VALUE: number}
        raise UnsupportedPropertyError(
            f"application property {key!r} = {number} does not fit a 64-bit AMQP integer"
        )
    if isinstance(value, bytes | bytearray | memoryview):
        return {TYPE: AMQPTypes.binary, VALUE: bytes(value)}
    if isinstance(value, Decimal) and not value.is_finite():
        raise UnsupportedPropertyError(f"application property {key!r} = {value} is not finite")
    return _value(key, value)


def sdk_properties(
    properties: Mapping[str, Any], update: PropertyUpdate | None = None
) -> dict[str | bytes, Any]:
    """Application properties ready for ``ServiceBusMessage`` / ``EventData``: a new dict whose
    values are typed where the SDK's default encoding would change or refuse them, with
    ``update`` applied (the send's trace context).

    Raises:
        UnsupportedPropertyError: a value no AMQP simple type can carry (see the module docstring).
    """
    # Text, floats, booleans and nulls are sent as they are (the common case: no checks).
    typed = {
        key: value if type(value) in _AS_IS else _typed(key, value)
        for key, value in properties.items()
    }
    if update is not None:
        update.apply(typed)
        for key, value in update.values.items():
            if type(value) not in _AS_IS:
                typed[key] = _typed(key, value)
    return cast("dict[str | bytes, Any]", typed)


__all__ = [
    "decode_properties",
    "salvage_properties",
    "sdk_properties",
]
