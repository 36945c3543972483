"""``replication emulator``: serve the namespaces of a config file until Ctrl-C.

    replication emulator --config infra/local/emulator-config.json
    replication emulator --topology examples/two-region-all-active.json

(``python -m replication.emulator`` where the wheel installed it, ``python -m emulator`` in a
checkout: the same command line.)

On start it prints one line per namespace, ``NAME<TAB>CONNECTION-STRING``. With
``--topology`` it prints ``export SETTING='CONNECTION-STRING'`` lines instead, one per app
setting the topology's namespaces read, ready to paste into the shell that runs
``python -m replication run``. A last line ``# emulator running; Ctrl-C stops it`` says the
list is complete.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode
from replication.settings import (
    DEFAULT_TOPOLOGY_PATH,
    TOPOLOGY_SETTING,
    Settings,
    load_local_settings,
)
from replication.topology import Topology

from . import run_emulator

READY_LINE = "# emulator running; Ctrl-C stops it"


def _config_from_topology(path: str) -> tuple[dict[str, Any], Topology]:
    """The emulator config rendered from a topology, and the topology."""
    from replication.render.emulator_config import emulator_config
    from replication.topology import load_topology

    topology = load_topology(path, user_code=False)  # entities only, no app code
    return emulator_config(topology), topology


DESCRIPTION = "Local Service Bus and Event Hubs emulator for the unmodified Azure SDKs."


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the emulator's arguments (all but ``--verbose``, which the caller's parser has)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--config", help="emulator Config.json (the official schema; several namespaces allowed)"
    )
    source.add_argument(
        "--topology",
        help="replication topology file to render the config from (default, without --config: "
        f"${TOPOLOGY_SETTING} or {DEFAULT_TOPOLOGY_PATH}, as every command)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; anything else exposes unauthenticated AMQP)",
    )
    parser.add_argument(
        "--data-dir",
        help="keep messages and events across restarts in DIR/<namespace>.json (default: memory)",
    )
    parser.add_argument(
        "--local-settings",
        metavar="FILE",
        help="with --topology: also write the connection settings into the Values of this "
        "local.settings.json (created if missing), where `func start` reads them",
    )


def write_local_settings(path: Path, settings: dict[str, str]) -> None:
    """Merge ``settings`` into the ``Values`` of the ``local.settings.json`` at ``path``.

    Raises:
        ConfigurationError: the file exists and is not a JSON object with an object ``Values``
            (:func:`~replication.settings.load_local_settings`).
    """
    document: dict[str, Any] = {"IsEncrypted": False, "Values": {}}
    if path.exists():
        document = load_local_settings(path)
    document["Values"].update(settings)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def parse_args(argv: Sequence[str] | None, *, prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    configure(parser)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every connection and link"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m emulator") -> int:
    args = parse_args(argv, prog=prog)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or Ctrl-C; the exit code (2: a bad config, 3: a port taken)."""
    topology: Topology | None = None
    try:
        if args.local_settings and args.config:
            raise ConfigurationError(
                "--local-settings needs a topology, not --config", source="arguments"
            )
        if not args.config:
            args.topology = args.topology or Settings.from_environ().topology
            config, topology = _config_from_topology(args.topology)
        else:
            config = args.config
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with run_emulator(config, host=args.host, data_dir=args.data_dir) as running:
            if topology is not None:
                settings = running.app_settings(topology)
                if args.local_settings:
                    write_local_settings(Path(args.local_settings), settings)
                for setting, connection in settings.items():
                    print(f"export {setting}='{connection}'", flush=True)
            else:
                for name in running.namespaces:
                    print(f"{name}\t{running.connection_string(name)}", flush=True)
            # On stdout, after the settings: a reader knows they are complete (and a shell that
            # sources the output ignores the comment).
            print(READY_LINE, flush=True)
            try:
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                pass
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.CONFIGURATION
    except OSError as error:
        print(f"error: cannot listen: {error.strerror}", file=sys.stderr)
        return ExitCode.UNAVAILABLE
    return ExitCode.OK
