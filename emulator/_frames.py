"""Rewrite outgoing AMQP frames so every performative carries its full field list.

python-qpid-proton omits trailing empty fields of performatives, which AMQP allows; the
azure-eventhub SDK's decoder indexes them positionally and fails on short lists (see
shared notes). :class:`FramePadder` takes the bytes proton writes and returns the same stream
with each performative's list padded with nulls to the count the specification defines.
"""

from __future__ import annotations

import struct

from ._amqp import AMQP_FRAME, PERFORMATIVE_FIELDS, Constructor

_NULL = bytes([Constructor.NULL])


def _pad_performative(body: bytes) -> bytes:
    """``body`` is a frame body; pad its leading described list, keep the payload after it."""
    if len(body) < 3 or body[0] != Constructor.DESCRIBED:
        return body
    if body[1] == Constructor.SMALL_ULONG:
        code, offset = body[2], 3
    elif body[1] == Constructor.ULONG and len(body) >= 10:
        code, offset = struct.unpack(">Q", body[2:10])[0], 10
    else:
        return body
    wanted = PERFORMATIVE_FIELDS.get(code)
    if wanted is None:
        return body
    constructor = body[offset]
    if constructor == Constructor.LIST0:
        size, count, items_start, items_end = 0, 0, offset + 1, offset + 1
    elif constructor == Constructor.LIST8:
        size, count = body[offset + 1], body[offset + 2]
        items_start, items_end = offset + 3, offset + 2 + size
    elif constructor == Constructor.LIST32:
        size, count = struct.unpack(">II", body[offset + 1 : offset + 9])
        items_start, items_end = offset + 9, offset + 5 + size
    else:
        return body
    if count >= wanted:
        return body
    items = body[items_start:items_end] + _NULL * (wanted - count)
    if len(items) + 1 <= 255:
        encoded = bytes([Constructor.LIST8, len(items) + 1, wanted]) + items
    else:
        encoded = bytes([Constructor.LIST32]) + struct.pack(">II", len(items) + 4, wanted) + items
    return body[:offset] + encoded + body[items_end:]


class FramePadder:
    """Stateful: feed it what proton writes, get back what to put on the socket."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> bytes:
        self._buffer += data
        out: list[bytes] = []
        while True:
            buffer = self._buffer
            if buffer[:4] == b"AMQP":
                if len(buffer) < 8:
                    break
                out.append(buffer[:8])
                self._buffer = buffer[8:]
                continue
            if len(buffer) < 8:
                break
            size, doff, frame_type = struct.unpack(">IBB", buffer[:6])
            if len(buffer) < size:
                break
            header_end = doff * 4
            frame, self._buffer = buffer[:size], buffer[size:]
            if frame_type != AMQP_FRAME or size == header_end:
                out.append(frame)
                continue
            body = _pad_performative(frame[header_end:])
            header = (
                struct.pack(">IBB", header_end + len(body), doff, frame_type) + frame[6:header_end]
            )
            out.append(header + body)
        return b"".join(out)
