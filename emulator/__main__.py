"""``python -m emulator``: serve the namespaces of a config file until Ctrl-C.

    python -m emulator --config infra/local/emulator-config.json
    python -m emulator --topology examples/two-region-all-active.json

On start it prints one line per namespace, ``NAME<TAB>CONNECTION-STRING``. With
``--topology`` it prints ``export SETTING='CONNECTION-STRING'`` lines instead, one per app
setting the topology's namespaces read, ready to paste into the shell that runs
``python -m replication run``. A last line ``# emulator running; Ctrl-C stops it`` says the
list is complete.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode
from replication.topology import Topology

from . import run_emulator

READY_LINE = "# emulator running; Ctrl-C stops it"


def _config_from_topology(path: str) -> tuple[dict[str, Any], Topology]:
    """The emulator config rendered from a topology, and the topology."""
    from replication.render.emulator_config import emulator_config
    from replication.topology import load_topology

    topology = load_topology(path, user_code=False)  # entities only, no app code
    return emulator_config(topology), topology


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m emulator",
        description="Local Service Bus and Event Hubs emulator for the unmodified Azure SDKs.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--config", help="emulator Config.json (the official schema; several namespaces allowed)"
    )
    source.add_argument("--topology", help="replication topology file to render the config from")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; anything else exposes unauthenticated AMQP)",
    )
    parser.add_argument(
        "--data-dir",
        help="keep messages and events across restarts in DIR/<namespace>.json (default: memory)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every connection and link")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    topology: Topology | None = None
    try:
        if args.topology:
            config, topology = _config_from_topology(args.topology)
        else:
            config = args.config
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with run_emulator(config, host=args.host, data_dir=args.data_dir) as running:
            if topology is not None:
                for setting, connection in running.app_settings(topology).items():
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


if __name__ == "__main__":
    sys.exit(main())
