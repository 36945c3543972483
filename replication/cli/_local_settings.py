"""The namespaces' connection settings from the ``local.settings.json`` beside the topology,
for the commands that connect to namespaces (``run``, ``status``, ``failover``, ``failback``,
``redrive``).

An app folder made by ``replication init`` holds ``topology.json`` and ``local.settings.json``
side by side, and ``replication emulator --local-settings local.settings.json`` writes the
emulator's connection settings into the second, where ``func start`` hands them to the Function
app. These commands read the same settings from there, so the folder runs under either host
without exporting anything.

Only the settings of the topology's ``connection`` prefixes are read (``SB_WEU`` and
``SB_WEU__...``): the file's other values configure the Function app under ``func start``
(``AzureWebJobsStorage`` names Azurite, which these commands would then need for Event Hubs
checkpoints and failover bindings), and they change these commands only when exported. The
environment wins, per namespace: where it sets any setting of a prefix (``SB_WEU`` or
``SB_WEU__fullyQualifiedNamespace``), that namespace's connection is the environment's alone,
since the file's connection string would otherwise beat an exported Entra ID setting. The file
holds this machine's defaults; an exported variable is a deliberate override (and what a
deployment or CI sets).

Each command says on standard error which settings it took from the file: the emulator writes
new ports there on every start, and a file left from a local run would otherwise point a
``status`` of the real namespaces at a stopped emulator without a word.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, MutableMapping
from pathlib import Path

from replication.exceptions import ConfigurationError
from replication.settings import LOCAL_SETTINGS_NAME, load_local_settings


def read_local_settings(
    topology: str | os.PathLike[str],
    connections: Iterable[str],
    environ: MutableMapping[str, str] | None = None,
) -> tuple[str, ...]:
    """Add the settings of the ``connections`` prefixes (each prefix itself and ``PREFIX__...``)
    from the ``Values`` of ``local.settings.json`` in ``topology``'s folder to ``environ``
    (default: the process environment), for each prefix of which ``environ`` sets nothing (an
    empty value counts as unset, as :class:`~replication.settings.Settings` reads it); returns
    the names it added (none without the file).

    Raises:
        ConfigurationError: the file is not JSON, ``Values`` is not an object, or a setting it
            would read is not a string (naming the file and the JSON path).
    """
    path = local_settings_path(topology)
    if not path.is_file():
        return ()
    values = load_local_settings(path)["Values"]
    added: list[str] = []
    target = os.environ if environ is None else environ
    prefixes = [p for p in connections if not any(v for k, v in target.items() if _of(k, p))]
    for name, value in values.items():
        if not any(_of(name, prefix) for prefix in prefixes):
            continue  # another setting, func start's business
        if not isinstance(value, str):
            raise ConfigurationError(
                f"must be a string, got {type(value).__name__}",
                source=str(path),
                location=f"$.Values.{name}",
            )
        target[name] = value
        added.append(name)
    return tuple(added)


def _of(name: str, prefix: str) -> bool:
    """Whether ``name`` is one of the settings of connection ``prefix``: the prefix itself or
    ``PREFIX__...``."""
    return name == prefix or name.startswith(f"{prefix}__")


def local_settings_path(topology: str | os.PathLike[str]) -> Path:
    """The ``local.settings.json`` beside ``topology``."""
    return Path(topology).parent / LOCAL_SETTINGS_NAME


def apply_local_settings(topology: str | os.PathLike[str], connections: Iterable[str]) -> None:
    """:func:`read_local_settings` into the process environment, and one ``note:`` line on
    standard error naming what it took from the file."""
    added = read_local_settings(topology, connections)
    if added:
        print(
            f"note: {', '.join(added)} from {local_settings_path(topology)} (not set in the "
            "environment)",
            file=sys.stderr,
            flush=True,
        )


__all__ = [
    "apply_local_settings",
    "local_settings_path",
    "read_local_settings",
]
