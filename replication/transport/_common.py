"""Helpers shared by the SDK converters: body joining and the text of message properties."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from replication.exceptions import MessageRejectedError
from replication.values import as_text


class UnsupportedBodyError(MessageRejectedError):
    """The message body is an AMQP value or sequence, which a byte-exact replica cannot carry."""

    reason = "UnsupportedBodyType"


class UndecodableFieldError(MessageRejectedError):
    """A message property that is text by contract (MessageId, CorrelationId, ...) holds binary
    that is not UTF-8: no replica could carry it unchanged."""

    reason = "UndecodableMessageField"


def text(value: Any, name: str = "value") -> str | None:
    """A str from a str, bytes (UTF-8) or None; other values (AMQP also allows ulong, uuid and
    binary message-ids) are formatted with ``str``. ``name`` says which field, for the error.

    Raises:
        UndecodableFieldError: ``value`` is binary that is not UTF-8.
    """
    try:
        return as_text(value)
    except UnicodeDecodeError:
        raise UndecodableFieldError(f"{name} {bytes(value)!r} is binary, not UTF-8 text") from None


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
