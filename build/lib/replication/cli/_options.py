"""Arguments several commands share."""

from __future__ import annotations

import argparse
import os

from replication.topology import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING


def add_topology_option(parser: argparse.ArgumentParser) -> None:
    """``--topology FILE`` with the setting/default fallback every command shares."""
    parser.add_argument(
        "--topology",
        default=os.environ.get(TOPOLOGY_SETTING, DEFAULT_TOPOLOGY_PATH),
        help=f"topology file (default: ${TOPOLOGY_SETTING} or {DEFAULT_TOPOLOGY_PATH})",
    )


__all__ = ["add_topology_option"]
