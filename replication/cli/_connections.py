"""The line a command prints, before it connects, for each namespace whose connection setting
is unset (:func:`~replication.transport.connections.identity_fallbacks`): ``status``, ``run``
and the failover commands would otherwise try Microsoft Entra ID at the topology's host name
and fail naming only the host."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from replication.settings import Settings
from replication.topology import NamespaceSpec
from replication.transport.connections import check_settings, identity_fallbacks


def check_connections(namespaces: Iterable[NamespaceSpec], settings: Settings) -> None:
    """Refuse connection strings that cannot be parsed (``ConfigurationError``, naming the
    setting), then print ``note: app setting X is not set ...`` on standard error for every
    namespace that falls back to Entra ID."""
    namespaces = list(namespaces)
    check_settings(namespaces, settings)
    for note in identity_fallbacks(namespaces, settings):
        print(f"note: {note}", file=sys.stderr, flush=True)


__all__ = ["check_connections"]
