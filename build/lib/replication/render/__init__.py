"""Everything that is generated from the topology (``python -m replication render`` prints it).

- ``emulator-config``: the emulators' Config.json (all namespaces; ``--official DIR`` writes
  one file per namespace for Microsoft's Docker emulators);
- ``az-cli``: an idempotent bash script of ``az servicebus`` / ``az eventhubs`` commands;
- ``bicep-params``: ``infra/main.parameters.json`` for ``infra/main.bicep``;
- ``app-settings``: the replication app settings of the Function app (``--identity-client-id``
  adds the ``<connection>__clientId`` settings of a user-assigned identity).

All work from ``materialize(topology)``, so the emulator, the CLI script and Bicep agree.
"""

from __future__ import annotations

from .app_settings import app_settings
from .az_cli import az_cli_script
from .bicep_params import bicep_parameters
from .emulator_config import emulator_config, official_configs

__all__ = [
    "app_settings",
    "az_cli_script",
    "bicep_parameters",
    "emulator_config",
    "official_configs",
]
