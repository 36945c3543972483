"""One AMQP frame splitter for the emulator's two stream rewriters.

The emulator rewrites AMQP byte streams in both directions: what proton writes, so that every
performative carries its full field list (:class:`emulator._frames.FramePadder`), and what a
client sends, so that delivery-ids arrive in sequence
(:class:`emulator._incoming.DeliveryIdRenumberer`). Both need the same cut: a stream that
arrives in arbitrary chunks, split into 8-byte protocol headers (``AMQP`` or SASL's, part 2
section 2.2) and frames (a 4-byte size, the data offset in 4-byte words, the frame type, the
channel; section 2.3), with an incomplete tail kept for the next chunk.
:class:`FrameRewriter` does that cut once and hands each complete AMQP frame that has a body
to its subclass's :meth:`FrameRewriter.rewrite`; protocol headers, SASL frames and empty
(heartbeat) frames pass through untouched.

Bytes that cannot be frames (a size under 8 or over :data:`MAX_FRAME`, a data offset under
2: an HTTP request, garbage) end the cutting: from there on the stream is handed on as it is,
for proton to reject with its own error and close the connection.
"""

from __future__ import annotations

import dataclasses
import struct

from ._amqp import AMQP_FRAME

PROTOCOL_HEADER = b"AMQP"
"""How the 8-byte protocol headers start (AMQP's and SASL's alike)."""
HEADER_SIZE = 8
"""Length of a protocol header, and of a frame header without extension."""
MAX_FRAME = 16 * 1024 * 1024
"""Larger than any frame the emulator accepts (its max-frame-size is 1 MB): a bigger size
field means the bytes are not AMQP frames."""

_FRAME_HEADER = struct.Struct(">IBBH")
"""size, data offset (4-byte words), type, channel."""


@dataclasses.dataclass(frozen=True, slots=True)
class Frame:
    """One complete AMQP frame: its raw bytes and where its body starts."""

    raw: bytes
    body_start: int
    channel: int

    @property
    def body(self) -> bytes:
        """The performative and, for a transfer, the payload after it."""
        return self.raw[self.body_start :]

    def with_body(self, body: bytes) -> bytes:
        """The frame re-encoded around a new body: the size field follows it, the header
        (extended header included) stays."""
        size = self.body_start + len(body)
        return struct.pack(">I", size) + self.raw[4 : self.body_start] + body


class FrameRewriter:
    """Stateful: feed it a byte stream in chunks, get back the rewritten stream (each call
    returns what is complete so far)."""

    def __init__(self) -> None:
        self._tail = b""
        """The start of a header or frame whose end has not arrived yet."""
        self._passthrough = False
        """Set once the stream is not AMQP frames: it is handed on untouched."""

    def rewrite(self, frame: Frame) -> bytes:
        """The bytes to send on for ``frame``, an AMQP frame with a body."""
        return frame.raw

    def feed(self, data: bytes) -> bytes:
        if self._passthrough:
            return data
        buffer = self._tail + data if self._tail else data
        out: list[bytes] = []
        pos, end = 0, len(buffer)
        while end - pos >= HEADER_SIZE:
            if buffer[pos : pos + 4] == PROTOCOL_HEADER:
                out.append(buffer[pos : pos + HEADER_SIZE])
                pos += HEADER_SIZE
                continue
            size, doff, frame_type, channel = _FRAME_HEADER.unpack_from(buffer, pos)
            body_start = doff * 4
            if not HEADER_SIZE <= size <= MAX_FRAME or doff < 2 or body_start > size:
                self._passthrough = True
                out.append(buffer[pos:])
                pos = end
                break
            if end - pos < size:
                break
            raw = buffer[pos : pos + size]
            pos += size
            if frame_type != AMQP_FRAME or size == body_start:
                out.append(raw)
            else:
                out.append(self.rewrite(Frame(raw, body_start, channel)))
        self._tail = buffer[pos:]
        return b"".join(out)


__all__ = ["MAX_FRAME", "Frame", "FrameRewriter"]
