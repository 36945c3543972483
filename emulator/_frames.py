"""Rewrite outgoing AMQP frames so every performative carries its full field list.

python-qpid-proton omits trailing empty fields of performatives, which AMQP allows; the
azure-eventhub SDK's decoder indexes them positionally and fails on short lists (see
shared notes). :class:`FramePadder` takes the bytes proton writes and returns the same stream
with each performative's list padded with nulls to the count the specification defines, and
the error a close, end or detach carries padded to its three fields (condition, description,
info), which the sync Service Bus SDK reads positionally too.
"""

from __future__ import annotations

from ._amqp import PERFORMATIVE_FIELDS, Constructor, Performative
from ._codec import described, encoded_list, list_bounds, value_end
from ._framing import Frame, FrameRewriter

_NULL = bytes([Constructor.NULL])


ERROR_DESCRIPTOR = 0x1D
"""``amqp:error:list``: condition, description, info (part 2, section 2.8.14)."""
ERROR_FIELDS = 3

_ERROR_FIELD: dict[int, int] = {Performative.CLOSE: 0, Performative.END: 0, Performative.DETACH: 2}
"""Where the performatives that end an endpoint carry their error."""


def _padded_list(data: bytes, offset: int, wanted: int) -> tuple[bytes, int] | None:
    """The list encoded at ``data[offset:]`` re-encoded with ``wanted`` items (nulls added),
    and where the original ended; None when it is no list or already has enough items."""
    bounds = list_bounds(data, offset)
    if bounds is None:
        return None
    count, items_start, items_end = bounds
    if count >= wanted:
        return None
    items = data[items_start:items_end] + _NULL * (wanted - count)
    return encoded_list(wanted, items), items_end


def _pad_error(body: bytes, code: int, offset: int) -> bytes:
    """``body`` with the error of a close, end or detach padded to its three fields: the sync
    Service Bus SDK reads ``frame[0][2]`` (info) of a close's error
    (``_pyamqp/_connection.py``, ``_incoming_close``), and proton leaves an absent info out."""
    index = _ERROR_FIELD.get(code)
    bounds = list_bounds(body, offset) if index is not None else None
    if index is None or bounds is None or bounds[0] <= index:
        return body
    pos = bounds[1]
    for _ in range(index):
        pos = value_end(body, pos)
    error = described(body, pos)
    if error is None or error[0] != ERROR_DESCRIPTOR:
        return body
    padded = _padded_list(body, error[1], ERROR_FIELDS)
    if padded is None:
        return body
    encoded, end = padded
    # The performative's list grew: re-encode it around its new items.
    count, items_start, items_end = bounds
    items = body[items_start : error[1]] + encoded + body[end:items_end]
    return body[:offset] + encoded_list(count, items) + body[items_end:]


def _pad_performative(body: bytes) -> bytes:
    """``body`` is a frame body; pad its leading described list (and the error it carries),
    keep the payload after it."""
    performative = described(body)
    if performative is None:
        return body
    code, offset = performative
    wanted = PERFORMATIVE_FIELDS.get(code)
    if wanted is None:
        return body
    padded = _padded_list(body, offset, wanted)
    if padded is not None:
        encoded, end = padded
        body = body[:offset] + encoded + body[end:]
    return _pad_error(body, code, offset)


class FramePadder(FrameRewriter):
    """Stateful: feed it what proton writes, get back what to put on the socket."""

    def rewrite(self, frame: Frame) -> bytes:
        body = frame.body
        padded = _pad_performative(body)
        return frame.raw if padded is body else frame.with_body(padded)
