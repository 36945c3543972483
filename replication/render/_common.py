"""Helpers shared by the renderers: durations, resource names and the entity walk."""

from __future__ import annotations

from datetime import timedelta

from replication.topology import NamespaceSpec


def iso_duration(value: timedelta) -> str:
    """ISO-8601 duration as ARM and the emulators write it: ``PT2M``, ``P14D``, ``PT0.5S``."""
    total = value.total_seconds()
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    date = f"{int(days)}D" if days else ""
    time = "".join(
        f"{amount}{unit}"
        for amount, unit in (
            (int(hours), "H"),
            (int(minutes), "M"),
            (f"{seconds:g}" if seconds else 0, "S"),
        )
        if amount
    )
    return "P" + date + (f"T{time}" if time else "") if (date or time) else "PT0S"


def resource_name(namespace: NamespaceSpec) -> str:
    """The Azure resource name of a namespace: the first label of its host name."""
    return namespace.fully_qualified_namespace.split(".", 1)[0].split(":", 1)[0]
