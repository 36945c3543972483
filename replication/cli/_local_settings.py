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
checkpoints and failover bindings), and they change these commands only when exported. A
variable already set in the environment wins: the file holds this machine's defaults, an
exported variable is a deliberate override (and what a deployment or CI sets).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, MutableMapping
from pathlib import Path

from replication.exceptions import ConfigurationError

LOCAL_SETTINGS_NAME = "local.settings.json"


def read_local_settings(
    topology: str | os.PathLike[str],
    connections: Iterable[str],
    environ: MutableMapping[str, str] | None = None,
) -> Path | None:
    """Add the settings of the ``connections`` prefixes (each prefix itself and ``PREFIX__...``)
    from the ``Values`` of ``local.settings.json`` in ``topology``'s folder to ``environ``
    (default: the process environment) where it has no value yet (unset or empty, which
    :class:`~replication.settings.Settings` reads as unset too); returns the file read, or
    ``None`` when there is none.

    Raises:
        ConfigurationError: the file is not JSON, or ``Values`` is not an object of strings
            (naming the file and the JSON path).
    """
    path = Path(topology).parent / LOCAL_SETTINGS_NAME
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})",
            source=str(path),
        ) from None
    values = document.get("Values", {}) if isinstance(document, dict) else None
    if not isinstance(values, dict):
        location = "$.Values" if isinstance(document, dict) else "$"
        raise ConfigurationError("must be an object", source=str(path), location=location)
    target = os.environ if environ is None else environ
    prefixes = tuple(connections)
    for name, value in values.items():
        if not isinstance(value, str):
            raise ConfigurationError(
                f"must be a string, got {type(value).__name__}",
                source=str(path),
                location=f"$.Values.{name}",
            )
        ours = name in prefixes or name.startswith(tuple(f"{p}__" for p in prefixes))
        if ours and not target.get(name):
            target[name] = value
    return path


__all__ = ["LOCAL_SETTINGS_NAME", "read_local_settings"]
