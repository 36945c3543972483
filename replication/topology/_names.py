"""Names the topology derives: safe for Azure resources and Function names, bounded, stable."""

from __future__ import annotations

import hashlib
import re

DIGEST_LENGTH = 8
"""Hex digits of the SHA-256 suffix that keeps a shortened name unique."""


def slug(name: str) -> str:
    """A name made safe for Function names and Azure resource names (letters, digits, dashes)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


def digest(text: str, length: int = DIGEST_LENGTH) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``text``: the same on every machine."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def bounded(name: str, limit: int) -> str:
    """``name`` itself when it fits in ``limit`` characters; else its head and ``-<digest>`` of
    the whole name, so that two long names that share a head stay different and the same name
    always shortens the same way."""
    if len(name) <= limit:
        return name
    head = name[: limit - DIGEST_LENGTH - 1].rstrip("-._")
    return f"{head}-{digest(name)}"


__all__ = ["bounded", "digest", "slug"]
