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

from ._amqp import Constructor, Performative
from ._codec import described, encoded_list, list_bounds, value_end
from ._framing import Frame, FrameRewriter

_BOOLEAN_TRUE = bytes([Constructor.BOOLEAN, 1])
"""``true`` in the one-byte boolean encoding (``0x41`` is the other)."""
_TRANSFER_MORE_FIELD = 5
"""Index of ``more`` in a transfer: handle, delivery-id, tag, format, settled, more."""


class DeliveryIdRenumberer(FrameRewriter):
    """Stateful: feed it what the client sends, get back what proton should read."""

    def __init__(self) -> None:
        super().__init__()
        self._next_id: dict[int, int] = {}
        """Per channel, the id the next new delivery gets (absent until the first transfer)."""
        self._continuing: dict[int, int] = {}
        """Per channel, the id of a delivery whose last transfer said ``more``."""

    def rewrite(self, frame: Frame) -> bytes:
        body = frame.body
        performative = described(body)
        if performative is None:
            return frame.raw
        code, offset = performative
        if code in (Performative.BEGIN, Performative.END):
            # A new or ended session starts its numbering afresh.
            self._next_id.pop(frame.channel, None)
            self._continuing.pop(frame.channel, None)
            return frame.raw
        if code != Performative.TRANSFER:
            return frame.raw
        try:
            rewritten = self._transfer(body, offset, frame.channel)
        except (IndexError, ValueError, struct.error):
            return frame.raw  # malformed: proton closes the connection with its own error
        return frame.raw if rewritten is body else frame.with_body(rewritten)

    def _transfer(self, body: bytes, offset: int, channel: int) -> bytes:
        bounds = list_bounds(body, offset)
        if bounds is None or bounds[0] < 2:
            return body
        count, items, list_end = bounds
        id_start = value_end(body, items)  # after the handle
        id_end = value_end(body, id_start)
        more = False
        if count > _TRANSFER_MORE_FIELD:
            pos = id_end
            for _ in range(_TRANSFER_MORE_FIELD - 2):
                pos = value_end(body, pos)
            more = body[pos] == Constructor.BOOLEAN_TRUE or body[pos : pos + 2] == _BOOLEAN_TRUE
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
        delivery_id = bytes([Constructor.UINT]) + struct.pack(">I", wanted)
        list_items = body[items:id_start] + delivery_id + body[id_end:list_end]
        # The payload (the message) follows the performative's list.
        return body[:offset] + encoded_list(count, list_items) + body[list_end:]


def _uint(body: bytes, pos: int) -> int:
    code = body[pos]
    if code == Constructor.UINT0:
        return 0
    if code == Constructor.SMALL_UINT:
        return body[pos + 1]
    if code == Constructor.UINT:
        value: int = struct.unpack(">I", body[pos + 1 : pos + 5])[0]
        return value
    raise ValueError(f"delivery-id is not a uint (0x{code:02x})")


__all__ = ["DeliveryIdRenumberer"]
