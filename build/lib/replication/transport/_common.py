"""Helpers shared by the SDK converters: body joining and bytes-to-str decoding."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from replication.exceptions import MessageRejectedError
from replication.values import as_text


class UnsupportedBodyError(MessageRejectedError):
    """The message body is an AMQP value or sequence, which a byte-exact replica cannot carry."""

    reason = "UnsupportedBodyType"


def text(value: Any) -> str | None:
    """A str from a str, bytes (UTF-8) or None; other values are formatted with ``str``."""
    return as_text(value)


def _decoded(value: Any) -> Any:
    # The SDKs decode AMQP strings as bytes; genuine binary values that are not UTF-8 stay bytes.
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    return value


def decode_properties(properties: Mapping[Any, Any] | None) -> dict[str, Any]:
    """Application properties with str keys and str (not bytes) string values."""
    if not properties:
        return {}
    return {
        key.decode("utf-8") if isinstance(key, bytes) else str(key): _decoded(value)
        for key, value in properties.items()
    }


def sdk_properties(properties: Mapping[str, Any]) -> dict[str | bytes, Any]:
    """A mutable copy of application properties, typed as the SDK constructors declare them."""
    return cast("dict[str | bytes, Any]", dict(properties))


def body_bytes(body: Any, body_type_name: str) -> bytes:
    """The data body as one bytes object.

    Raises:
        UnsupportedBodyError: the body is an AMQP value or sequence section.
    """
    if body_type_name != "data":
        raise UnsupportedBodyError(
            f"body type '{body_type_name}' cannot be replicated byte-exactly; "
            "only AMQP data bodies are supported"
        )
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    return b"".join(bytes(part) for part in _as_iterable(body))


def _as_iterable(body: Any) -> Iterable[Any]:
    return body if not isinstance(body, str) else [body.encode("utf-8")]
