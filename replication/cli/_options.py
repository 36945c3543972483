"""Arguments several commands share."""

from __future__ import annotations

import argparse

from replication.settings import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING, Settings


def add_topology_option(parser: argparse.ArgumentParser) -> None:
    """``--topology FILE`` with the setting/default fallback every command shares."""
    parser.add_argument(
        "--topology",
        default=Settings.from_environ().topology,
        help=f"topology file (default: ${TOPOLOGY_SETTING} or {DEFAULT_TOPOLOGY_PATH})",
    )


__all__ = ["add_topology_option"]
