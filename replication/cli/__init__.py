"""The ``replication`` command line (``replication COMMAND ...``, or ``python -m replication``).

Each command is one module of this package with ``configure(parser)``, which adds its
arguments, and ``run(args) -> int``, which does the work and returns an
:class:`~replication.exit_codes.ExitCode`. :data:`COMMANDS` names them with a one-line help and
the extras they need (:mod:`replication.extras`); a command's module is imported only when that
command is chosen, so ``validate`` does not load the Azure SDKs that ``run`` needs and
``--help`` loads nothing.

A :class:`~replication.exceptions.ReplicationError` ends the command with a one-line message
and exit code 2 (``CONFIGURATION``), never a traceback; so does a command whose extra is not
installed, before anything of it is imported (``--help`` included). One that says a service
could not be reached or did not answer (the failover store, a namespace read past its deadline:
:func:`~replication.exit_codes.exit_code_for`) exits 3 (``UNAVAILABLE``). An argument the chosen
command does not know is reported with that command's usage. ``-v`` works before or after the
command name; ``--version`` prints the distribution's version.

The chosen command's module is imported with the cyclic garbage collector paused
(:func:`_collector_paused`): importing ``run`` leaves about 50,000 objects the collector tracks
(module dictionaries, functions, classes, the pydantic topology models), almost none of them
garbage, and the 120 or so automatic collections it would trigger meanwhile find next to
nothing; pausing it saves about 1.1 % of the instructions ``run`` spends starting (issue 26;
``docs/benchmarks.md``; the history in ``CHANGELOG.md``). The collector runs again as soon as the
imports are done.

pydantic looks for plugins in the entry points of every installed distribution when it builds
its first model; the CLI skips that unless ``PYDANTIC_DISABLE_PLUGINS`` is set (it sets
:data:`PYDANTIC_PLUGINS_SETTING` to ``__all__`` when absent): in the development environment
(128 distributions) the scan was 2.4 % of the instructions ``run`` spends before it connects
(issue 37). Set it to an empty value to have pydantic's plugins loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from replication import __version__
from replication.exceptions import MissingExtraError, ReplicationError
from replication.exit_codes import ExitCode, exit_code_for
from replication.extras import require
from replication.transforms import add_code_root

PYDANTIC_PLUGINS_SETTING = "PYDANTIC_DISABLE_PLUGINS"
"""pydantic's own setting: which of its plugins not to load (``__all__``: none is loaded)."""

PROG = "replication"
"""The console script's name; ``python -m replication`` passes its own spelling."""


@dataclass(frozen=True)
class Command:
    """A command: its one-line help, the module that implements it and the extras it needs."""

    help: str
    module: str
    extras: tuple[str, ...] = ()


COMMANDS: dict[str, Command] = {
    "validate": Command("validate a topology file and summarize it", "replication.cli.validate"),
    "plan": Command(
        "dry-run every task in memory and print what would be forwarded", "replication.cli.plan"
    ),
    "run": Command("run every task locally with the SDKs", "replication.cli.run"),
    "status": Command(
        "print each task's backlog, dead-letter and parked counts and heartbeat ages",
        "replication.cli.status",
    ),
    "lint-rules": Command(
        "parse every SQL filter and action of the topology (and of Bicep files: extra 'lint')",
        "replication.cli.lint_rules",
    ),
    "redrive": Command(
        "move one task's parked or dead-lettered messages back into replication",
        "replication.cli.redrive",
    ),
    "failover": Command(
        "move an application's publishers and consumers to a replica namespace",
        "replication.cli.failover",
    ),
    "failback": Command(
        "move an application's clients back to the namespace its replica copies",
        "replication.cli.failover",
    ),
    "drill": Command(
        "kill a primary, switch, restore, fail back on this machine, and measure it",
        "replication.cli.drill",
        extras=("local",),
    ),
    "render": Command("generate configuration from the topology", "replication.cli.render"),
    "schema": Command(
        'print the topology file\'s JSON Schema (for "$schema" in your topology)',
        "replication.cli.schema",
    ),
    "init": Command(
        "create an app of your own: function_app.py, topology, settings, infra/, azure.yaml",
        "replication.cli.init",
    ),
    "emulator": Command(
        "serve a topology's namespaces on a local AMQP emulator the Azure SDKs talk to",
        "replication.cli.emulator",
        extras=("local",),
    ),
    "audit": Command(
        "the Spark duplicate audit: duplicates, losses, lag and loops across regions",
        "replication.cli.audit",
        extras=("audit",),
    ),
    "demo": Command(
        "every pattern on the local emulator, counted from what the brokers hold (or one "
        "--topology), the mesh audited with Spark",
        "replication.cli.demo",
        extras=("local",),
    ),
}


def _verbose(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="log at DEBUG level"
    )


def build_parser(
    chosen: str | None = None, *, prog: str = PROG
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser and each command's subparser; only the ``chosen`` command's module is
    imported to add its arguments."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Message replication for Azure Service Bus and Event Hubs."
    )
    _verbose(parser, default=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands: dict[str, argparse.ArgumentParser] = {}
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        # SUPPRESS: a -v given before the command is not reset by the sub-command's default.
        _verbose(subparser, default=argparse.SUPPRESS)
        if name == chosen:
            importlib.import_module(command.module).configure(subparser)
        commands[name] = subparser
    return parser, commands


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No automatic garbage collection inside (for imports: many objects, no garbage)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _chosen(argv: Sequence[str]) -> str | None:
    return next((arg for arg in argv if arg in COMMANDS), None)


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(arguments)
    if chosen is not None:
        try:
            for extra in COMMANDS[chosen].extras:
                require(extra, needed_by=f"{prog} {chosen}")
        except MissingExtraError as error:
            print(f"error: {error}", file=sys.stderr)
            return ExitCode.CONFIGURATION
    os.environ.setdefault(PYDANTIC_PLUGINS_SETTING, "__all__")
    with _collector_paused():
        parser, commands = build_parser(chosen, prog=prog)
    args, unknown = parser.parse_known_args(arguments)
    if unknown:
        commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    # As ``python -m`` would: the app's own modules may sit in the working directory.
    add_code_root(os.getcwd(), "the current directory")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # The SDKs log every AMQP state change at INFO; keep their warnings and errors.
        logging.getLogger("azure").setLevel(logging.WARNING)
    module = importlib.import_module(COMMANDS[args.command].module)
    try:
        code: int = module.run(args)
    except ReplicationError as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_code_for(error)
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    return code


__all__ = ["COMMANDS", "PROG", "Command", "build_parser", "main"]
