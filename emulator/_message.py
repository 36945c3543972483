"""A message as the broker keeps it: proton reads the sections before the body, the body stays
the bytes the client sent.

The broker reads and rewrites header, annotations and properties (rules, locks, sequence
numbers, dead-letter reasons) and never looks at a body. proton's ``Message``, though, decodes
a body into Python values and encodes it again, which loses what AMQP allows and Python cannot
hold:

- an AMQP value that is a map with a binary key: proton hands binary out as a memoryview, which
  cannot be a dict key, so decoding raised and the connection was dropped;
- several data sections, or several AMQP sequence sections (Microsoft's annotated-message
  samples send both): proton keeps only the last one.

:class:`BrokerMessage` keeps the body sections (and a footer after them) as raw bytes and puts
them back after whatever proton encodes, so a body goes through the broker byte for byte.
"""

from __future__ import annotations

from typing import Any

from proton import Message

from ._amqp import Section
from ._codec import message_sections

_BODY_AND_AFTER = frozenset(
    {Section.DATA, Section.AMQP_SEQUENCE, Section.AMQP_VALUE, Section.FOOTER}
)


class BrokerMessage(Message):  # type: ignore[misc]
    """A proton ``Message`` whose body sections are kept encoded (see the module docstring).

    ``body`` is not used: a message built by the broker itself (a reply, a heartbeat) is a
    plain ``Message``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.raw_body = b""

    def decode(self, data: bytes) -> None:
        """Read ``data``: proton decodes the sections before the body, the rest is kept."""
        try:
            sections = message_sections(data)
        except (ValueError, IndexError):
            # Not a sequence of message sections: let proton report what is wrong with it.
            self.raw_body = b""
            super().decode(data)
            return
        head = b"".join(data[a:b] for code, a, b in sections if code not in _BODY_AND_AFTER)
        self.raw_body = b"".join(data[a:b] for code, a, b in sections if code in _BODY_AND_AFTER)
        super().decode(head)

    def encode(self) -> bytes:
        """The sections proton encodes, then the body exactly as it was received."""
        head: bytes = super().encode()
        return head + self.raw_body

    def copy(self) -> BrokerMessage:
        """An independent copy (annotations and properties can be changed on it)."""
        duplicate = BrokerMessage()
        duplicate.decode(self.encode())
        return duplicate


__all__ = ["BrokerMessage"]
