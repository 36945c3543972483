"""Property and AMQP values as text: one rule for every converter.

The SDKs and python-qpid-proton hand out AMQP strings as ``bytes`` (the Python SDK decodes
them so) or ``memoryview`` (proton's buffers), and ids may be strings, UUIDs or numbers.
:func:`as_text` turns any of them into ``str`` the same way everywhere; ``None`` stays ``None``.
"""

from __future__ import annotations

from typing import Literal


def as_text(value: object, *, errors: Literal["strict", "replace"] = "strict") -> str | None:
    """``value`` as ``str``: UTF-8 for bytes-like values, ``str()`` for others, None for None.

    ``errors="strict"`` (the library's default) raises on bytes that are not UTF-8, so a binary
    value is never silently altered; tools that only display values pass ``"replace"``.
    """
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors=errors)
    return str(value)


__all__ = ["as_text"]
