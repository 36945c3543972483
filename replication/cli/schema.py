"""``replication schema``: the topology file's JSON Schema, from the models the loader uses.

Point a topology at it with ``"$schema"`` (the loader ignores that key) and editors complete
keys, pattern names and options, and flag what the schema can see (see
:mod:`replication.topology._schema` for what only the loader checks). ``--output FILE`` writes
the file instead of printing it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from replication.exit_codes import ExitCode
from replication.topology import topology_schema_text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", metavar="FILE", help="write the schema here (default: print)")


def run(args: argparse.Namespace) -> int:
    text = topology_schema_text()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return ExitCode.OK
