"""Wording shared by the commands' output."""

from __future__ import annotations


def counted(count: int, one: str, many: str) -> str:
    """``count`` and its noun, singular for exactly one ("1 message", "2 copies")."""
    return f"{count} {one if count == 1 else many}"


__all__ = ["counted"]
