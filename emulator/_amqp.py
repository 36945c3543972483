"""AMQP 1.0 wire codes the emulator reads and writes by hand, named (OASIS AMQP 1.0, part 1
"Types" and part 3 "Messaging"; the Azure SDK's ``_pyamqp/types.py`` and ``constants.py`` name
the same values).

python-qpid-proton encodes and decodes whole messages; the emulator only touches bytes where
proton does not help: splitting batch transfers, rewriting a message's header, padding
performatives. Those places use these names instead of bare hex.
"""

from __future__ import annotations

import enum

BATCH_MESSAGE_FORMAT = 0x80013700
"""The transfer message format of a Service Bus / Event Hubs batch (Microsoft's extension)."""


class Constructor(enum.IntEnum):
    """Format codes of AMQP primitive encodings (part 1, section 1.6)."""

    DESCRIBED = 0x00
    NULL = 0x40
    BOOLEAN_TRUE = 0x41
    BOOLEAN_FALSE = 0x42
    UINT0 = 0x43
    ULONG0 = 0x44
    LIST0 = 0x45
    SMALL_UINT = 0x52
    SMALL_ULONG = 0x53
    BOOLEAN = 0x56
    UINT = 0x70
    ULONG = 0x80
    VBIN8 = 0xA0
    VBIN32 = 0xB0
    LIST8 = 0xC0
    LIST32 = 0xD0


FIXED_WIDTHS: dict[int, int] = {
    **dict.fromkeys((0x40, 0x41, 0x42, 0x43, 0x44, 0x45), 0),
    **dict.fromkeys((0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56), 1),
    **dict.fromkeys((0x60, 0x61), 2),
    **dict.fromkeys((0x70, 0x71, 0x72, 0x73), 4),
    **dict.fromkeys((0x80, 0x81, 0x82, 0x83, 0x84), 8),
    **dict.fromkeys((0x94, 0x98), 16),
}
"""Payload width of every fixed-width constructor: null, booleans, (small) integers, floats,
timestamps, decimals, UUIDs."""

ONE_BYTE_SIZE_CATEGORIES = (0xA, 0xC, 0xE)
"""High nibbles of variable-width, compound and array encodings with a 1-byte size."""
FOUR_BYTE_SIZE_CATEGORIES = (0xB, 0xD, 0xF)
"""The same with a 4-byte size."""


class Section(enum.IntEnum):
    """Descriptor codes of the message sections (part 3, section 3.2), in their wire order."""

    HEADER = 0x70
    DELIVERY_ANNOTATIONS = 0x71
    MESSAGE_ANNOTATIONS = 0x72
    PROPERTIES = 0x73
    APPLICATION_PROPERTIES = 0x74
    DATA = 0x75
    AMQP_SEQUENCE = 0x76
    AMQP_VALUE = 0x77
    FOOTER = 0x78


class Performative(enum.IntEnum):
    """Descriptor codes of the transport performatives (part 2, section 2.7)."""

    OPEN = 0x10
    BEGIN = 0x11
    ATTACH = 0x12
    FLOW = 0x13
    TRANSFER = 0x14
    DISPOSITION = 0x15
    DETACH = 0x16
    END = 0x17
    CLOSE = 0x18


PERFORMATIVE_FIELDS: dict[int, int] = {
    Performative.OPEN: 10,
    Performative.BEGIN: 8,
    Performative.ATTACH: 14,
    Performative.FLOW: 11,
    Performative.TRANSFER: 11,
    Performative.DISPOSITION: 6,
    Performative.DETACH: 3,
    Performative.END: 1,
    Performative.CLOSE: 1,
}
"""Number of fields of each performative's list (the SDKs index them positionally)."""

AMQP_FRAME = 0x00
"""Frame type of AMQP frames (0x01 is SASL)."""


class ErrorCondition(enum.StrEnum):
    """The error conditions the emulator sends (part 2, section 2.8.15 and following; the
    vendor conditions of Service Bus sessions are in ``emulator._sessions``)."""

    NOT_FOUND = "amqp:not-found"
    NOT_ALLOWED = "amqp:not-allowed"
    LINK_STOLEN = "amqp:link:stolen"
    MESSAGE_SIZE_EXCEEDED = "amqp:link:message-size-exceeded"


__all__ = [
    "AMQP_FRAME",
    "BATCH_MESSAGE_FORMAT",
    "FIXED_WIDTHS",
    "FOUR_BYTE_SIZE_CATEGORIES",
    "ONE_BYTE_SIZE_CATEGORIES",
    "PERFORMATIVE_FIELDS",
    "Constructor",
    "ErrorCondition",
    "Performative",
    "Section",
]
