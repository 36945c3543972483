"""Rewrite incoming transfers so that proton sees their delivery-ids in sequence.

The sync Service Bus SDK is not thread-safe, and its ``AutoLockRenewer`` renews up to ten
locks at once from a pool of threads, all through the receiver's one management link: two
threads can take the same ``next_outgoing_id`` of the AMQP session (``_pyamqp/session.py``,
``_outgoing_transfer``) and send two transfers with one delivery-id, or send them out of order.
proton enforces the specification's rule that each new delivery's id is the previous one plus
one, and closes the connection ("sequencing error, expected delivery-id 2, got 1"); Service
Bus tolerates it (Microsoft's ``auto_lock_renew.py`` sample runs against Azure). So the
emulator renumbers: per AMQP session (channel), every transfer that starts a delivery gets the
next id in sequence, and the continuation frames of a multi-frame delivery get the id of the
delivery they continue. The requests on such a link reach the broker intact; only the ids the
emulator's dispositions refer to differ from the ones the client chose, which the SDK's
management link does not rely on (it matches replies by correlation-id).
"""

from __future__ import annotations

import struct

from ._amqp import AMQP_FRAME, Constructor, Performative
from ._codec import value_end

MAX_FRAME = 16 * 1024 * 1024
"""Larger than any frame the emulator accepts (its max-frame-size is 1 MB): a bigger size
field means the bytes are not AMQP frames."""

_BEGIN = Performative.BEGIN
_TRANSFER = Performative.TRANSFER
_END = Performative.END


class DeliveryIdRenumberer:
    """Stateful: feed it what the client sends, get back what proton should read."""

    def __init__(self) -> None:
        self._buffer = b""
        self._next_id: dict[int, int] = {}
        """Per channel, the id the next new delivery gets (absent until the first transfer)."""
        self._continuing: dict[int, int] = {}
        """Per channel, the id of a delivery whose last transfer said ``more``."""
        self._passthrough = False
        """Set once the stream is not AMQP frames: it is handed on untouched."""

    def feed(self, data: bytes) -> bytes:
        if self._passthrough:
            return data
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
            if not 8 <= size <= MAX_FRAME or doff < 2:
                # Not AMQP (an HTTP request, garbage): hand everything to proton, which
                # rejects it and closes the connection.
                self._passthrough = True
                out.append(buffer)
                self._buffer = b""
                break
            if len(buffer) < size:
                break
            frame, self._buffer = buffer[:size], buffer[size:]
            out.append(self._frame(frame, doff, frame_type) if frame_type == AMQP_FRAME else frame)
        return b"".join(out)

    def _frame(self, frame: bytes, doff: int, frame_type: int) -> bytes:
        header_end = doff * 4
        channel = struct.unpack(">H", frame[6:8])[0]
        body = frame[header_end:]
        if len(body) < 3 or body[0] != Constructor.DESCRIBED or body[1] != Constructor.SMALL_ULONG:
            return frame
        code = body[2]
        if code in (_BEGIN, _END):  # a new or ended session starts its numbering afresh
            self._next_id.pop(channel, None)
            self._continuing.pop(channel, None)
            return frame
        if code != _TRANSFER:
            return frame
        try:
            rewritten = self._transfer(body, channel)
        except (IndexError, ValueError):
            return frame  # malformed: proton closes the connection with its own error
        if rewritten is body:
            return frame
        return (
            struct.pack(">IBB", header_end + len(rewritten), doff, frame_type)
            + frame[6:header_end]
            + rewritten
        )

    def _transfer(self, body: bytes, channel: int) -> bytes:
        offset = 3
        constructor = body[offset]
        if constructor == Constructor.LIST8:
            count, items = body[offset + 2], offset + 3
        elif constructor == Constructor.LIST32:
            count, items = struct.unpack(">I", body[offset + 5 : offset + 9])[0], offset + 9
        else:
            return body
        if count < 2:
            return body
        handle_end = value_end(body, items)
        id_start, id_end = handle_end, value_end(body, handle_end)
        more = False
        if count >= 6:  # handle, delivery-id, tag, format, settled, more
            pos = id_end
            for _ in range(3):
                pos = value_end(body, pos)
            more = body[pos] == Constructor.BOOLEAN_TRUE or body[pos : pos + 2] == b"\x56\x01"
        continuing = self._continuing.get(channel)
        if continuing is not None:
            wanted = continuing
        elif body[id_start] == Constructor.NULL:
            return body  # no id and no delivery to continue: proton's to judge
        else:
            wanted = self._next_id.get(channel, _uint(body, id_start))
            self._next_id[channel] = (wanted + 1) & 0xFFFFFFFF
        if more:
            self._continuing[channel] = wanted
        else:
            self._continuing.pop(channel, None)
        if body[id_start] != Constructor.NULL and _uint(body, id_start) == wanted:
            return body
        encoded = bytes([Constructor.UINT]) + struct.pack(">I", wanted)
        items_bytes = body[items:id_start] + encoded + body[id_end:]
        # items_bytes runs to the end of the frame: the payload follows the list.
        list_end = value_end(body, offset)
        growth = len(encoded) - (id_end - id_start)
        new_list_size = list_end - offset - (2 if constructor == Constructor.LIST8 else 5) + growth
        list_items = items_bytes[: len(items_bytes) - (len(body) - list_end)]
        payload = body[list_end:]
        if new_list_size <= 255 and constructor == Constructor.LIST8:
            head = bytes([Constructor.LIST8, new_list_size, count])
        else:
            head = bytes([Constructor.LIST32]) + struct.pack(">II", len(list_items) + 4, count)
        return body[:offset] + head + list_items + payload


def _uint(body: bytes, pos: int) -> int:
    code = body[pos]
    if code == Constructor.UINT0:
        return 0
    if code == 0x52:  # smalluint
        return body[pos + 1]
    if code == Constructor.UINT:
        value: int = struct.unpack(">I", body[pos + 1 : pos + 5])[0]
        return value
    raise ValueError(f"delivery-id is not a uint (0x{code:02x})")


__all__ = ["DeliveryIdRenumberer"]
