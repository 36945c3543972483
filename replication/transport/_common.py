"""Helpers shared by the SDK converters: body joining, the text of message properties, an absent
properties section, and what can be salvaged of a message that cannot be converted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from replication.exceptions import UndecodableFieldError, UnsupportedBodyError
from replication.properties import DEAD_LETTER_BODY_OMITTED, DEAD_LETTER_PROPERTIES_OMITTED
from replication.values import as_text

from ._properties import decode_properties, salvage_properties


class NoMessageProperties:
    """The AMQP properties section of a message that has none: every field is None, as the
    SDKs' accessors (``message.message_id`` and the others) say. The converters read the
    section once, through this when it is missing, instead of through those accessors, each of
    which lists the section's fields first to see whether it is empty."""

    message_id = correlation_id = content_type = subject = to = reply_to = None
    group_id = reply_to_group_id = None


_NO_MESSAGE_PROPERTIES = NoMessageProperties()


def properties_section(message: Any) -> Any:
    """The AMQP properties section of a received SDK message or event (``raw_amqp_message``),
    or :class:`NoMessageProperties` when it has none. Tested with ``is None``: the truth test
    the SDKs' accessors use lists the section's fields as well."""
    section = message.raw_amqp_message.properties
    return _NO_MESSAGE_PROPERTIES if section is None else section


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


class Salvage:
    """What a converter keeps of a message it cannot convert, for its parked copy: every field
    and application property that converts, the body when it is a data body, and markers
    saying what is missing and why (:data:`~replication.properties.DEAD_LETTER_BODY_OMITTED`,
    :data:`~replication.properties.DEAD_LETTER_PROPERTIES_OMITTED`), so that the copy is never
    taken for the whole original.

    An AMQP value or sequence body is not kept: the SDKs' decoder (``_pyamqp/_decode.py``)
    hands string, symbol and binary all out as ``bytes`` and every integer width as ``int``, so
    the section cannot be encoded again exactly from what they return; the marker says so.
    """

    def __init__(self) -> None:
        self.omitted: list[str] = []
        self.body_problem: str | None = None

    def text(self, value: Any, name: str) -> str | None:
        try:
            return text(value, name)
        except UndecodableFieldError as error:
            self.omitted.append(str(error))
            return None

    def properties(self, properties: Mapping[Any, Any] | None) -> dict[str, Any]:
        kept, omitted = salvage_properties(properties)
        self.omitted.extend(omitted)
        return kept

    def body(self, body: Any, body_type_name: str) -> bytes:
        try:
            return body_bytes(body, body_type_name)
        except UnsupportedBodyError:
            self.body_problem = (
                f"an AMQP {body_type_name} body: no replica carries it byte-exactly, and the SDK "
                "decodes it without the AMQP types (string, symbol and binary all as bytes, "
                "integers without their width), so it cannot be parked exactly"
            )
            return b""

    def markers(self) -> dict[str, str]:
        """The notice properties for what was not kept (none when everything was)."""
        markers: dict[str, str] = {}
        if self.body_problem is not None:
            markers[DEAD_LETTER_BODY_OMITTED] = self.body_problem
        if self.omitted:
            markers[DEAD_LETTER_PROPERTIES_OMITTED] = "; ".join(self.omitted)[:1024]
        return markers


class Strict:
    """Reading a message that must convert whole: the first field that does not raises its
    :class:`~replication.exceptions.MessageRejectedError`. The same methods as
    :class:`Salvage`, so that one field map per message type serves both."""

    def text(self, value: Any, name: str) -> str | None:
        return text(value, name)

    def properties(self, properties: Mapping[Any, Any] | None) -> dict[str, Any]:
        return decode_properties(properties)

    def body(self, body: Any, body_type_name: str) -> bytes:
        return body_bytes(body, body_type_name)

    def markers(self) -> dict[str, str]:
        return {}


STRICT = Strict()

FieldReader = Strict | Salvage
"""How a converter reads a message's fields: strictly, or salvaging what converts."""
