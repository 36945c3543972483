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
