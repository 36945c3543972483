"""The emulator's byte-level AMQP code against encodings produced by python-qpid-proton.

Walking message sections, splitting batch transfers, rewriting headers and padding
performatives are the only places the emulator reads or writes AMQP by hand; here they meet
proton's own encoder, byte for byte.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from proton import Data, Message, symbol

from emulator._amqp import PERFORMATIVE_FIELDS, Constructor, Performative, Section
from emulator._codec import message_sections, split_batch, value_end, with_header
from emulator._frames import ERROR_DESCRIPTOR, FramePadder


def encoded(**fields: object) -> bytes:
    """An encoded message; a bytes body is a data section (``inferred``), as the SDKs send it."""
    message = Message(inferred=True, **fields)
    data: bytes = message.encode()
    return data


def test_sections_of_a_full_message_are_found_in_order() -> None:
    data = encoded(
        body=b"payload",
        id="m-1",
        ttl=5.0,
        properties={"k": "v"},
        annotations={symbol("x-opt-partition-key"): "p"},
    )
    sections = message_sections(data)
    assert [code for code, _, _ in sections] == [
        Section.HEADER,
        Section.MESSAGE_ANNOTATIONS,
        Section.PROPERTIES,
        Section.APPLICATION_PROPERTIES,
        Section.DATA,
    ]
    assert sections[-1][2] == len(data)


def test_value_end_covers_fixed_variable_and_described_values() -> None:
    assert value_end(bytes([Constructor.NULL]), 0) == 1
    assert value_end(bytes([Constructor.UINT, 0, 0, 0, 7]), 0) == 5
    assert value_end(bytes([Constructor.VBIN8, 3, 1, 2, 3]), 0) == 5
    assert value_end(bytes([Constructor.VBIN32]) + struct.pack(">I", 2) + b"ab", 0) == 7
    described = bytes([Constructor.DESCRIBED, Constructor.SMALL_ULONG, 0x75, 0xA0, 1, 9])
    assert value_end(described, 0) == len(described)
    with pytest.raises(ValueError, match="unknown AMQP constructor"):
        value_end(b"\x01", 0)


def test_a_payload_is_never_taken_for_a_batch() -> None:
    single = encoded(body=b"\x00\x53\x75 looks like a section")
    assert split_batch(single) == [single]


def test_a_batch_transfer_splits_into_its_messages() -> None:
    inner = [encoded(body=f"m{n}".encode()) for n in range(3)]
    batch = b"".join(
        bytes([Constructor.DESCRIBED, Constructor.SMALL_ULONG, Section.DATA, Constructor.VBIN8])
        + bytes([len(message)])
        + message
        for message in inner
    )
    assert split_batch(batch) == inner


def test_with_header_writes_every_field_and_replaces_the_old_header() -> None:
    data = encoded(body=b"x", ttl=2.0)
    rewritten = with_header(data, ttl_ms=2000, delivery_count=0)
    decoded = Message()
    decoded.decode(rewritten)
    assert decoded.ttl == 2.0
    assert decoded.delivery_count == 0
    assert decoded.body == b"x"
    sections = message_sections(rewritten)
    assert [code for code, _, _ in sections].count(Section.HEADER) == 1
    # durable, priority, ttl, first-acquirer, delivery-count: five fields, none left out.
    start = sections[0][1]
    assert rewritten[start + 3] == Constructor.LIST8
    assert rewritten[start + 5] == 5


def _frame(performative: Performative, fields: bytes, count: int) -> bytes:
    body = bytes([Constructor.DESCRIBED, Constructor.SMALL_ULONG, performative])
    body += bytes([Constructor.LIST8, len(fields) + 1, count]) + fields
    return struct.pack(">IBB", 8 + len(body), 2, 0) + b"\x00\x00" + body


def test_performatives_are_padded_to_their_full_field_count_across_chunks() -> None:
    detach = _frame(Performative.DETACH, bytes([Constructor.UINT0]), 1)
    padder = FramePadder()
    out = padder.feed(b"AMQP\x00\x01\x00\x00" + detach[:5]) + padder.feed(detach[5:])
    assert out[:8] == b"AMQP\x00\x01\x00\x00"
    frame = out[8:]
    size = struct.unpack(">I", frame[:4])[0]
    assert size == len(frame)
    body = frame[8:]
    assert body[3] == Constructor.LIST8
    assert body[5] == PERFORMATIVE_FIELDS[Performative.DETACH]
    assert body[6:] == bytes([Constructor.UINT0, Constructor.NULL, Constructor.NULL])


def test_a_complete_performative_is_left_alone() -> None:
    close = _frame(Performative.CLOSE, bytes([Constructor.NULL]), 1)
    assert FramePadder().feed(close) == close


def _error_list(condition: bytes, description: bytes) -> bytes:
    """An ``amqp:error:list`` with condition and description only, as proton writes an error
    without info."""
    items = (
        bytes([0xA3, len(condition)]) + condition + bytes([0xA1, len(description)]) + description
    )
    return bytes([Constructor.DESCRIBED, Constructor.SMALL_ULONG, ERROR_DESCRIPTOR,
                  Constructor.LIST8, len(items) + 1, 2]) + items  # fmt: skip


def _error_fields(frame: bytes) -> list[Any]:
    """The fields of the error a padded close, end or detach carries, decoded by proton."""
    data = Data()
    data.decode(frame[8:])
    performative = data.get_object()
    fields = performative.value
    error = fields[0] if performative.descriptor != Performative.DETACH else fields[2]
    return list(error.value)


@pytest.mark.parametrize(
    ("performative", "before", "after_error"),
    [
        (Performative.CLOSE, b"", b""),
        (Performative.END, b"", b""),
        (Performative.DETACH, bytes([Constructor.UINT0, Constructor.BOOLEAN_TRUE]), b""),
    ],
)
def test_an_error_without_info_is_padded_to_its_three_fields(
    performative: Performative, before: bytes, after_error: bytes
) -> None:
    """The sync Service Bus SDK reads a close's error positionally, info included
    (``_pyamqp/_connection.py``: ``frame[0][2]``); proton leaves an absent info out."""
    error = _error_list(b"amqp:session:window-violation", b"the peer sent too much")
    count = PERFORMATIVE_FIELDS[performative]
    frame = _frame(performative, before + error + after_error, count)
    padded = FramePadder().feed(frame)
    assert struct.unpack(">I", padded[:4])[0] == len(padded)
    assert _error_fields(padded) == [
        symbol("amqp:session:window-violation"),
        "the peer sent too much",
        None,
    ]
