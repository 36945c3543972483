"""``python -m replication failover|failback``: move an application's clients to another namespace.

::

    python -m replication failover --topology FILE --app NAME [--instance ID] [--entity E]
        --to NAMESPACE [--dry-run] [--force] [--settle SECONDS] [--timeout SECONDS]

The switch is written to the application's binding document in the failover store
(``REPLICATION_FAILOVER_STORAGE``, else ``AzureWebJobsStorage``; container
``REPLICATION_FAILOVER_CONTAINER``, default ``replication-failover``); the application's
:mod:`replication.failover` clients follow it within their poll interval. The order of the
planned path, what it waits for and what it refuses are in :mod:`replication.failover._plan`,
the execution in :mod:`replication.failover.switching`; each step is printed with the figures
it waited on. ``--dry-run`` prints the plan and the
current figures (backlogs, messages not replicated: the RPO of a failover now) and changes
nothing. ``--force`` switches at once and names what the old namespace has not replicated.

The command holds the binding document's blob lease while it runs, so a second switch of the
same application is refused; a command that dies leaves a lease that expires within 60 s.

Every network call is bounded by ``--call-timeout`` (default 10 s): a namespace that does not
answer is "unknown" (a forced switch moves the clients first and counts afterwards, so it never
waits on one), and a failover store that does not answer fails the command.

Exit codes: ``OK`` (done, or nothing to do); ``CONFIGURATION`` (2) for a refused switch (a
namespace not part of the replication, the wrong direction, a switch in progress) or bad
settings; ``UNAVAILABLE`` (3) when the failover store cannot be reached, or the planned path
did not see replication catch up (or the namespace drain) within ``--timeout``: the bindings the
switch found are put back (see :mod:`replication.failover.switching`).
"""

from __future__ import annotations

import argparse
import os

from replication.exceptions import ConfigurationError
from replication.failover._plan import Direction
from replication.failover.switching import DEFAULT_SETTLE, DEFAULT_TIMEOUT, switch
from replication.settings import Settings
from replication.topology import load_topology
from replication.transport.failover import failover_store_from_settings

from ._connections import check_connections
from ._local_settings import apply_local_settings
from ._options import (
    add_call_timeout_option,
    add_topology_option,
    non_negative_seconds,
    positive_seconds,
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser, transforms=False)
    add_call_timeout_option(parser)
    parser.add_argument("--app", required=True, help="the application whose clients move")
    parser.add_argument("--instance", help="move only this instance of the application")
    parser.add_argument("--entity", help="move only the clients of this entity")
    parser.add_argument("--to", required=True, metavar="NAMESPACE", help="where they move")
    parser.add_argument("--dry-run", action="store_true", help="print the steps; change nothing")
    parser.add_argument(
        "--force", action="store_true", help="switch at once, accepting what is not replicated"
    )
    parser.add_argument(
        "--settle",
        type=non_negative_seconds,
        default=DEFAULT_SETTLE,
        help=f"seconds for clients to follow a change (default {DEFAULT_SETTLE:g})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        help=f"seconds to wait for replication or drain (default {DEFAULT_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    topology = load_topology(args.topology, user_code=False)  # entities only, no app code
    apply_local_settings(args.topology, topology.connections)
    environ = dict(os.environ)
    check_connections(
        topology.namespaces, Settings.from_environ(environ, connections=topology.connections)
    )
    store = failover_store_from_settings(environ, timeout=args.call_timeout)
    if store is None:
        raise ConfigurationError(
            "no failover store: set REPLICATION_FAILOVER_STORAGE (or AzureWebJobsStorage) to a "
            "storage connection string"
        )
    try:
        return switch(
            topology,
            store,
            environ,
            app=args.app,
            instance=args.instance,
            entity=args.entity,
            target=args.to,
            direction=Direction(args.command),
            force=args.force,
            dry_run=args.dry_run,
            settle=args.settle,
            timeout=args.timeout,
            call_timeout=args.call_timeout,
        )
    finally:
        store.close()
