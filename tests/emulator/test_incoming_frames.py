"""The renumbering of incoming transfers (emulator/_incoming.py), byte for byte, checked by
decoding the rewritten frames with python-qpid-proton."""

from __future__ import annotations

import struct

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from proton import Data

from emulator._amqp import Constructor, Performative
from emulator._incoming import DeliveryIdRenumberer


def _transfer(channel: int, delivery_id: int | None, *, more: bool = False) -> bytes:
    """A transfer frame: handle 0, the delivery-id, tag, format 0, settled false, more, and a
    payload after the performative."""
    fields = bytes([Constructor.UINT0])
    fields += bytes([Constructor.NULL]) if delivery_id is None else bytes([0x52, delivery_id])
    fields += bytes([Constructor.VBIN8, 1, 0x01, Constructor.UINT0, Constructor.BOOLEAN_FALSE])
    fields += bytes([Constructor.BOOLEAN_TRUE if more else Constructor.BOOLEAN_FALSE])
    body = bytes([Constructor.DESCRIBED, Constructor.SMALL_ULONG, Performative.TRANSFER])
    body += bytes([Constructor.LIST8, len(fields) + 1, 6]) + fields + b"payload"
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def _decoded(frames: bytes) -> list[tuple[int, int | None, bytes]]:
    """(channel, delivery-id, payload) of each frame."""
    found = []
    while frames:
        size, channel = struct.unpack(">I", frames[:4])[0], struct.unpack(">H", frames[6:8])[0]
        body, frames = frames[8:size], frames[size:]
        data = Data()
        consumed = data.decode(body)
        performative = data.get_object()
        found.append((channel, performative.value[1], body[consumed:]))
    return found


def test_repeated_and_out_of_order_ids_become_a_sequence_per_channel() -> None:
    frames = b"".join(
        [_transfer(0, 1), _transfer(0, 1), _transfer(1, 7), _transfer(0, 0), _transfer(1, 7)]
    )
    renumberer = DeliveryIdRenumberer()
    out = renumberer.feed(frames[:13]) + renumberer.feed(frames[13:])
    assert _decoded(out) == [
        (0, 1, b"payload"),
        (0, 2, b"payload"),
        (1, 7, b"payload"),
        (0, 3, b"payload"),
        (1, 8, b"payload"),
    ]


def test_the_frames_of_a_multi_frame_delivery_keep_its_id() -> None:
    frames = _transfer(0, 4) + _transfer(0, 4, more=True) + _transfer(0, None) + _transfer(0, 9)
    assert [delivery for _, delivery, _ in _decoded(DeliveryIdRenumberer().feed(frames))] == [
        4,
        5,
        5,
        6,
    ]
