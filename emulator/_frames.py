"""Rewrite outgoing AMQP frames so every performative carries its full field list.

python-qpid-proton omits trailing empty fields of performatives, which AMQP allows; the
azure-eventhub SDK's decoder indexes them positionally and fails on short lists (see
shared notes). :class:`FramePadder` takes the bytes proton writes and returns the same stream
with each performative's list padded with nulls to the count the specification defines, and
the error a close, end or detach carries padded to its three fields (condition, description,
info), which the sync Service Bus SDK reads positionally too.
"""

from __future__ import annotations

import struct

from ._amqp import AMQP_FRAME, PERFORMATIVE_FIELDS, Constructor, Performative
from ._codec import value_end

_NULL = bytes([Constructor.NULL])


ERROR_DESCRIPTOR = 0x1D
"""``amqp:error:list``: condition, description, info (part 2, section 2.8.14)."""
ERROR_FIELDS = 3

_ERROR_FIELD: dict[int, int] = {Performative.CLOSE: 0, Performative.END: 0, Performative.DETACH: 2}
"""Where the performatives that end an endpoint carry their error."""


def _padded_list(data: bytes, offset: int, wanted: int) -> tuple[bytes, int] | None:
    """The list encoded at ``data[offset:]`` re-encoded with ``wanted`` items (nulls added),
    and where the original ended; None when it is no list or already has enough items."""
    constructor = data[offset]
    if constructor == Constructor.LIST0:
        count, items_start, items_end = 0, offset + 1, offset + 1
    elif constructor == Constructor.LIST8:
        size, count = data[offset + 1], data[offset + 2]
        items_start, items_end = offset + 3, offset + 2 + size
    elif constructor == Constructor.LIST32:
        size, count = struct.unpack(">II", data[offset + 1 : offset + 9])
        items_start, items_end = offset + 9, offset + 5 + size
    else:
        return None
    if count >= wanted:
        return None
    items = data[items_start:items_end] + _NULL * (wanted - count)
    if len(items) + 1 <= 255:
        encoded = bytes([Constructor.LIST8, len(items) + 1, wanted]) + items
    else:
        encoded = bytes([Constructor.LIST32]) + struct.pack(">II", len(items) + 4, wanted) + items
    return encoded, items_end


def _descriptor(body: bytes, pos: int = 0) -> tuple[int, int] | None:
    """(descriptor code, offset of the described value) of a described value at ``pos``."""
    if len(body) < pos + 3 or body[pos] != Constructor.DESCRIBED:
        return None
    if body[pos + 1] == Constructor.SMALL_ULONG:
        return body[pos + 2], pos + 3
    if body[pos + 1] == Constructor.ULONG and len(body) >= pos + 10:
        return struct.unpack(">Q", body[pos + 2 : pos + 10])[0], pos + 10
    return None


def _pad_error(body: bytes, code: int, offset: int) -> bytes:
    """``body`` with the error of a close, end or detach padded to its three fields: the sync
    Service Bus SDK reads ``frame[0][2]`` (info) of a close's error
    (``_pyamqp/_connection.py``, ``_incoming_close``), and proton leaves an absent info out."""
    index = _ERROR_FIELD.get(code)
    if index is None or body[offset] not in (Constructor.LIST8, Constructor.LIST32):
        return body
    pos = offset + (3 if body[offset] == Constructor.LIST8 else 9)
    for _ in range(index):
        pos = value_end(body, pos)
    described = _descriptor(body, pos)
    if described is None or described[0] != ERROR_DESCRIPTOR:
        return body
    padded = _padded_list(body, described[1], ERROR_FIELDS)
    if padded is None:
        return body
    encoded, end = padded
    inner = body[: described[1]] + encoded + body[end:]
    # The performative's list grew: rewrite its size.
    growth = len(inner) - len(body)
    if body[offset] == Constructor.LIST8:
        if body[offset + 1] + growth > 255:
            return body
        return inner[: offset + 1] + bytes([body[offset + 1] + growth]) + inner[offset + 2 :]
    size = struct.unpack(">I", body[offset + 1 : offset + 5])[0] + growth
    return inner[: offset + 1] + struct.pack(">I", size) + inner[offset + 5 :]


def _pad_performative(body: bytes) -> bytes:
    """``body`` is a frame body; pad its leading described list (and the error it carries),
    keep the payload after it."""
    described = _descriptor(body)
    if described is None:
        return body
    code, offset = described
    wanted = PERFORMATIVE_FIELDS.get(code)
    if wanted is None:
        return body
    padded = _padded_list(body, offset, wanted)
    if padded is not None:
        encoded, end = padded
        body = body[:offset] + encoded + body[end:]
    return _pad_error(body, code, offset)


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
