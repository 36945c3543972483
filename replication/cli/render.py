"""``python -m replication render WHAT``: configuration rendered from the topology.

``emulator-config`` (one config with every namespace, or with ``--official DIR`` one file per
namespace for Microsoft's Docker emulators), ``az-cli`` (an idempotent provisioning script),
``bicep-params`` (the parameters of ``infra/main.bicep``) and ``app-settings`` (the replication
app settings, for apps deployed without the Bicep files). See :mod:`replication.render`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from replication.exit_codes import ExitCode
from replication.render import (
    app_settings,
    az_cli_script,
    bicep_parameters,
    emulator_config,
    official_configs,
)

from ._options import add_topology_option, topology_of

TARGETS = ("emulator-config", "az-cli", "bicep-params", "app-settings")
"""What the command renders, in the order usage lists them."""


def configure(parser: argparse.ArgumentParser) -> None:
    # The metavar names the choices: argparse's "required" error names a positional by its
    # metavar, else by its dest, so without one a bare ``render`` said only "required: what".
    parser.add_argument(
        "what",
        choices=TARGETS,
        metavar="{" + ",".join(TARGETS) + "}",
        help="what to render: an emulator config, a provisioning script of az commands, the "
        "parameters of infra/main.bicep, or the app settings",
    )
    add_topology_option(parser, transforms=False)
    parser.add_argument("--output", help="file to write (default: standard output)")
    parser.add_argument(
        "--official", metavar="DIR", help="emulator-config: one file per namespace for Docker"
    )
    parser.add_argument(
        "--deployed-topology",
        default="topology.json",
        help="bicep-params, app-settings: the app setting REPLICATION_TOPOLOGY, the topology "
        "file's path in the deployed Function app (default: topology.json; the preprovision "
        "hook passes $REPLICATION_TOPOLOGY)",
    )
    parser.add_argument(
        "--identity-client-id",
        metavar="CLIENT_ID",
        help="app-settings: client id of the app's user-assigned managed identity",
    )


def _write(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args, user_code=False)  # entities only, no app code
    if args.what == "emulator-config" and args.official:
        folder = Path(args.official)
        folder.mkdir(parents=True, exist_ok=True)
        for name, config in official_configs(topology).items():
            (folder / name).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {folder / name}", file=sys.stderr)
        return ExitCode.OK
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
        return ExitCode.OK
    _write(json.dumps(document, indent=2) + "\n", args.output)
    return ExitCode.OK
