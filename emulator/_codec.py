"""Just enough AMQP 1.0 encoding knowledge to walk a message's sections and rewrite its header."""

from __future__ import annotations

import struct
from typing import Any

from replication.values import as_text

from ._amqp import (
    FIXED_WIDTHS,
    FOUR_BYTE_SIZE_CATEGORIES,
    ONE_BYTE_SIZE_CATEGORIES,
    Constructor,
    Section,
)

_SECTIONS = frozenset(Section)


def value_end(data: bytes, pos: int) -> int:
    """Index just past the AMQP-encoded value starting at ``pos``."""
    code = data[pos]
    if code == Constructor.DESCRIBED:  # descriptor, then the value
        return value_end(data, value_end(data, pos + 1))
    if code in FIXED_WIDTHS:
        return pos + 1 + FIXED_WIDTHS[code]
    if code >> 4 in ONE_BYTE_SIZE_CATEGORIES:
        return pos + 2 + data[pos + 1]
    if code >> 4 in FOUR_BYTE_SIZE_CATEGORIES:
        return pos + 5 + int.from_bytes(data[pos + 1 : pos + 5], "big")
    raise ValueError(f"unknown AMQP constructor 0x{code:02x}")


def described(data: bytes, pos: int = 0) -> tuple[int, int] | None:
    """(descriptor code, offset of the described value) of a described value at ``pos`` whose
    descriptor is a numeric code; None for anything else."""
    if len(data) < pos + 3 or data[pos] != Constructor.DESCRIBED:
        return None
    if data[pos + 1] == Constructor.SMALL_ULONG:
        return data[pos + 2], pos + 3
    if data[pos + 1] == Constructor.ULONG and len(data) >= pos + 10:
        code: int = struct.unpack_from(">Q", data, pos + 2)[0]
        return code, pos + 10
    return None


def list_bounds(data: bytes, offset: int) -> tuple[int, int, int] | None:
    """(item count, start of the first item, end of the list) of the list encoded at
    ``offset``; None when no list starts there."""
    constructor = data[offset]
    if constructor == Constructor.LIST0:
        return 0, offset + 1, offset + 1
    if constructor == Constructor.LIST8:
        return data[offset + 2], offset + 3, offset + 2 + data[offset + 1]
    if constructor == Constructor.LIST32:
        size, count = struct.unpack_from(">II", data, offset + 1)
        return count, offset + 9, offset + 5 + size
    return None


def encoded_list(count: int, items: bytes) -> bytes:
    """A list of ``count`` already encoded ``items``, in the short form when it fits."""
    if len(items) + 1 <= 255 and count <= 255:
        return bytes([Constructor.LIST8, len(items) + 1, count]) + items
    return bytes([Constructor.LIST32]) + struct.pack(">II", len(items) + 4, count) + items


def text(value: Any) -> str:
    """An AMQP string, symbol or binary value as text ("" for null).

    python-qpid-proton hands binary values out as memoryviews into its own buffer: they are
    copied and decoded here, never formatted with ``str``.
    """
    return as_text(value, errors="replace") or ""


def message_sections(data: bytes) -> list[tuple[int, int, int]]:
    """(section code, start, end) of each section of an encoded message."""
    sections = []
    pos = 0
    while pos < len(data):
        if (
            data[pos] != Constructor.DESCRIBED
            or data[pos + 1] != Constructor.SMALL_ULONG
            or data[pos + 2] not in _SECTIONS
        ):
            raise ValueError("not a message section")
        end = value_end(data, pos)
        sections.append((data[pos + 2], pos, end))
        pos = end
    return sections


def with_header(encoded: bytes, *, ttl_ms: int | None, delivery_count: int) -> bytes:
    """``encoded`` with its header section replaced by one that writes every field.

    proton leaves out fields equal to their defaults, so a first delivery would carry no
    delivery-count and the SDK would report None instead of 0.
    """
    null, uint = bytes([Constructor.NULL]), bytes([Constructor.UINT])
    ttl = null if ttl_ms is None else uint + struct.pack(">I", ttl_ms)
    # durable=true, priority=null, ttl, first-acquirer=null, delivery-count
    fields = bytes([Constructor.BOOLEAN_TRUE]) + null + ttl + null + uint
    fields += struct.pack(">I", delivery_count)
    header = bytes(
        [Constructor.DESCRIBED, Constructor.SMALL_ULONG, Section.HEADER, Constructor.LIST8]
    )
    header += bytes([len(fields) + 1, 5]) + fields
    sections = message_sections(encoded)
    if sections and sections[0][0] == Section.HEADER:
        return header + encoded[sections[0][2] :]
    return header + encoded


def _binary(data: bytes, start: int) -> bytes:
    """The bytes of the binary value of the data section that starts at ``start``."""
    value = start + 3
    if data[value] == Constructor.VBIN8:
        return data[value + 2 : value + 2 + data[value + 1]]
    size = int.from_bytes(data[value + 1 : value + 5], "big")
    return data[value + 5 : value + 5 + size]


def split_batch(data: bytes) -> list[bytes]:
    """The encoded messages of a batch transfer, or ``[data]`` for a single message.

    A batch (transfer message format ``BATCH_MESSAGE_FORMAT``, which proton does not expose) is a
    message whose data sections each hold one complete encoded message, a batch of one included.
    A payload is never mistaken for one: it would have to parse, to its last byte, as AMQP
    message sections.
    """
    try:
        sections = message_sections(data)
        bodies = [_binary(data, start) for code, start, _ in sections if code == Section.DATA]
        if bodies and all(message_sections(body) for body in bodies):
            return bodies
    except (ValueError, IndexError):
        pass
    return [data]
