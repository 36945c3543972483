"""``python -m replication run``: every task of the topology, locally, with the SDKs.

It stops on Ctrl-C, or with ``--until-idle N`` once no task has received anything for N
seconds, and prints per task how many messages and batches it handled. On a terminal it shows
a live per-task table meanwhile (:mod:`._live`); otherwise the log lines only. It exits with
``UNAVAILABLE`` (3) when a task was failing at the end (it could not reach its source or its
targets, or its last batch failed), so that a script notices. See :mod:`replication.hosts.local`
for what it runs and which settings it reads.
"""

from __future__ import annotations

import argparse
import sys
import threading

from replication.exit_codes import ExitCode
from replication.hosts.local import LocalHost
from replication.settings import Settings
from replication.telemetry import configure_local_telemetry

from ._connections import check_connections
from ._local_settings import apply_local_settings
from ._options import add_topology_option, positive_seconds, topology_of
from ._text import counted


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    parser.add_argument(
        "--until-idle",
        type=positive_seconds,
        metavar="SECONDS",
        help="stop once nothing was received for this long",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=600.0,
        help="with --until-idle: give up after this many seconds",
    )


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args)
    apply_local_settings(args.topology, topology.connections)
    # Metrics and traces go to OTLP or the console when the settings ask for it (see
    # replication/telemetry/_setup.py); by default nothing is exported.
    configure_local_telemetry(Settings.from_environ())
    check_connections(topology.namespaces, Settings.from_environ(connections=topology.connections))
    with LocalHost(topology) as host:
        print(f"running {len(topology.tasks)} task(s); Ctrl-C to stop", flush=True)
        interrupted = False
        try:
            if sys.stdout.isatty():
                _wait_with_table(host, args)
            elif args.until_idle is not None:
                host.wait_until_idle(args.until_idle, timeout=args.timeout)
            else:
                threading.Event().wait()
        except KeyboardInterrupt:
            interrupted = True
    for name, status in host.status.items():
        line = (
            f"  {name}: {counted(status.messages, 'message', 'messages')} in "
            f"{counted(status.batches, 'batch', 'batches')}, {status.parked} parked, "
            f"{counted(status.failures, 'failure', 'failures')}"
        )
        if status.failing:
            line += f"; FAILING: {status.last_error}"
        print(line)
    for (origin, target), age in host.heartbeats.ages().items():
        print(f"  heartbeat {origin} -> {target}: " + ("none" if age is None else f"{age:.1f} s"))
    if interrupted and args.until_idle is not None:
        return ExitCode.INTERRUPTED  # stopped before the idle it was asked to wait for
    failing = host.failing()
    if failing:
        print(f"{len(failing)} task(s) not making progress: {', '.join(failing)}")
        return ExitCode.UNAVAILABLE
    return ExitCode.OK


def _wait_with_table(host: LocalHost, args: argparse.Namespace) -> None:
    """The live table until the run ends (``--until-idle`` in a thread beside it)."""
    done = threading.Event()
    if args.until_idle is not None:

        def idle() -> None:
            host.wait_until_idle(args.until_idle, timeout=args.timeout)
            done.set()

        threading.Thread(target=idle, name="until-idle", daemon=True).start()
    # Only on a terminal: rich takes a tenth of a second of CPU to import.
    from ._live import show_live

    show_live(host, done)
