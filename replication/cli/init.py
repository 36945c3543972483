"""``replication init DIR [--example NAME] [--wheel FILE]``: a new Function app of your own.

See :mod:`replication.scaffold` for what is written. Prints each file and the next commands.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from replication.exit_codes import ExitCode
from replication.scaffold import DEFAULT_EXAMPLE, create_app, example_names


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", metavar="DIR", help="the app's folder (new, or empty)")
    parser.add_argument(
        "--example",
        default=DEFAULT_EXAMPLE,
        metavar="NAME",
        help=f"the topology to start from (default {DEFAULT_EXAMPLE}): "
        + ", ".join(example_names()),
    )
    parser.add_argument(
        "--wheel",
        type=Path,
        metavar="FILE",
        help="this library's wheel, vendored into DIR/wheels/ for the remote build (default: "
        "the wheel it was installed from, a wheel built from a checkout, or the package index)",
    )


def run(args: argparse.Namespace) -> int:
    created = create_app(Path(args.folder), example=args.example, wheel=args.wheel)
    print(f"created {created.folder} from the example {created.example}:")
    for name in created.files:
        print(f"  {name}")
    print(f"requirements.txt: {created.requirement.origin}")
    print(
        f"\nnext:\n  cd {created.folder}\n"
        "  python -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt\n"
        "  replication validate --topology topology.json\n"
        "  azd up              # provision infra/ and deploy (README.md says more)"
    )
    return ExitCode.OK
