"""The ``replication`` command line (``python -m replication ...``).

Sub-commands live in their own modules, each exposing ``register(subparsers)`` that adds its
parser and sets ``handler`` (a function of the parsed arguments returning the exit code). This
module only wires them together and turns :class:`~replication.exceptions.ReplicationError` into
a one-line message and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from replication.exceptions import ReplicationError

COMMAND_MODULES: tuple[str, ...] = (
    "replication.commands",
    "replication.local_run",
    "replication.rule_lint",
    "replication.render",
    "replication.demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m replication",
        description="Message replication for Azure Service Bus and Event Hubs.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # The SDKs log every AMQP state change at INFO; keep their warnings and errors.
        logging.getLogger("azure").setLevel(logging.WARNING)
    try:
        code: int = args.handler(args)
    except ReplicationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return code


__all__ = ["build_parser", "main"]
