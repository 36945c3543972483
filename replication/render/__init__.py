"""``python -m replication render ...``: everything that is generated from the topology.

- ``emulator-config``: the emulators' Config.json (all namespaces; ``--official DIR`` writes
  one file per namespace for Microsoft's Docker emulators);
- ``az-cli``: an idempotent bash script of ``az servicebus`` / ``az eventhubs`` commands;
- ``bicep-params``: ``infra/main.parameters.json`` for ``infra/main.bicep``;
- ``app-settings``: the replication app settings of the Function app (``--identity-client-id``
  adds the ``<connection>__clientId`` settings of a user-assigned identity).

All work from ``Topology.materialized()``, so the emulator, the CLI script and Bicep agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from replication.commands import add_topology_option
from replication.topology import load_topology

from .app_settings import app_settings
from .az_cli import az_cli_script
from .bicep_params import bicep_parameters
from .emulator_config import emulator_config, official_configs


def _write(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _render(args: argparse.Namespace) -> int:
    topology = load_topology(args.topology)
    if args.what == "emulator-config" and args.official:
        folder = Path(args.official)
        folder.mkdir(parents=True, exist_ok=True)
        for name, config in official_configs(topology).items():
            (folder / name).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {folder / name}", file=sys.stderr)
        return 0
    document: Any
    if args.what == "emulator-config":
        document = emulator_config(topology)
    elif args.what == "bicep-params":
        document = bicep_parameters(topology, topology_path=args.deployed_topology)
    elif args.what == "app-settings":
        document = app_settings(
            topology,
            topology_path=args.deployed_topology,
            identity_client_id=args.identity_client_id,
        )
    else:
        _write(az_cli_script(topology, source=args.topology), args.output)
        return 0
    _write(json.dumps(document, indent=2) + "\n", args.output)
    return 0


def register(subparsers: Any) -> None:
    """Add ``render`` to the CLI."""
    parser = subparsers.add_parser("render", help="generate configuration from the topology")
    parser.add_argument(
        "what", choices=["emulator-config", "az-cli", "bicep-params", "app-settings"]
    )
    add_topology_option(parser)
    parser.add_argument("--output", help="file to write (default: standard output)")
    parser.add_argument(
        "--official", metavar="DIR", help="emulator-config: one file per namespace for Docker"
    )
    parser.add_argument(
        "--deployed-topology",
        default="topology.json",
        help="path of the topology file in the deployed Function app",
    )
    parser.add_argument(
        "--identity-client-id",
        metavar="CLIENT_ID",
        help="app-settings: client id of the app's user-assigned managed identity",
    )
    parser.set_defaults(handler=_render)


__all__ = ["app_settings", "az_cli_script", "bicep_parameters", "emulator_config", "register"]
