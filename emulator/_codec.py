"""Just enough AMQP 1.0 encoding knowledge to walk a message's sections and rewrite its header."""

from __future__ import annotations

import struct
from typing import Any

from replication.values import as_text

_SECTION = 0x53


def _value_end(data: bytes, pos: int) -> int:
    """Index just past the AMQP-encoded value starting at ``pos``."""
    code = data[pos]
    if code == 0x00:  # described: descriptor then value
        return _value_end(data, _value_end(data, pos + 1))
    fixed = {0x40: 0, 0x41: 0, 0x42: 0, 0x43: 0, 0x44: 0, 0x45: 0, 0x50: 1, 0x51: 1, 0x52: 1,
             0x53: 1, 0x54: 1, 0x55: 1, 0x56: 1, 0x60: 2, 0x61: 2, 0x70: 4, 0x71: 4, 0x72: 4,
             0x73: 4, 0x80: 8, 0x81: 8, 0x82: 8, 0x83: 8, 0x84: 8, 0x94: 16, 0x98: 16}  # fmt: skip
    if code in fixed:
        return pos + 1 + fixed[code]
    if code >> 4 in (0xA, 0xC, 0xE):  # one-byte size
        return pos + 2 + data[pos + 1]
    if code >> 4 in (0xB, 0xD, 0xF):  # four-byte size
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
        if data[pos] != 0x00 or data[pos + 1] != _SECTION or not 0x70 <= data[pos + 2] <= 0x78:
            raise ValueError("not a message section")
        end = _value_end(data, pos)
        sections.append((data[pos + 2], pos, end))
        pos = end
    return sections


def with_header(encoded: bytes, *, ttl_ms: int | None, delivery_count: int) -> bytes:
    """``encoded`` with its header section replaced by one that writes every field.

    proton leaves out fields equal to their defaults, so a first delivery would carry no
    delivery-count and the SDK would report None instead of 0.
    """
    ttl = b"\x40" if ttl_ms is None else b"\x70" + struct.pack(">I", ttl_ms)
    fields = b"\x41" + b"\x40" + ttl + b"\x40" + b"\x70" + struct.pack(">I", delivery_count)
    header = b"\x00\x53\x70\xc0" + bytes([len(fields) + 1, 5]) + fields
    sections = message_sections(encoded)
    if sections and sections[0][0] == 0x70:
        return header + encoded[sections[0][2] :]
    return header + encoded
