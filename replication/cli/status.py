"""``python -m replication status``: what an operator needs before pressing the failover button.

Prints per task (lanes and heartbeat tasks included) its state (replicating, lagging, stalled,
failing, or unknown) and why, the backlog of its source (Service Bus: counted by peeking,
capped at ``--cap``, because the data-plane SDK has no count; Event Hubs: per partition the
events after the task's checkpoint, with ``AzureWebJobsStorage`` set), the age of the oldest
unreplicated message, the dead-lettered and parked counts, the newest heartbeat of each of its
paths and the RPO if you failed over now; then every heartbeat path's newest heartbeat. With
``--json`` the same as one JSON object. The figures and their meaning are
:mod:`replication.operations`' (the failover commands read the same ones); the thresholds come
from the topology's ``monitoring`` section. Connection settings are those of ``run``
(:mod:`replication.transport.connections`). Then, when a failover store is configured
(``REPLICATION_FAILOVER_STORAGE``, else ``AzureWebJobsStorage``), where each application is
bound: its binding document's rules, a switch in progress, the last switch, or why the document
cannot be used, naming the blob (:mod:`replication.failover.overview`).

Every read is bounded by ``--call-timeout`` (default 10 s): a namespace or store that does not
answer is reported as unreachable, never waited for.

Exit codes: ``OK``; ``UNAVAILABLE`` (3) when a namespace, the checkpoint store or the failover
store could not be read, the others still reported; ``CONFIGURATION`` (2) for a bad topology or
setting.
"""

from __future__ import annotations

import argparse
import json
import os

from replication.exit_codes import ExitCode
from replication.failover.overview import (
    BindingOverview,
    overview_json,
    overview_lines,
    read_overview,
)
from replication.operations import (
    PEEK_CAP,
    StatusReport,
    capture_line,
    heartbeat_text,
    read_status,
    task_lines,
)
from replication.settings import Settings
from replication.transport.failover import failover_store_from_settings

from ._connections import check_connections
from ._local_settings import apply_local_settings
from ._options import add_call_timeout_option, add_topology_option, positive_int, topology_of


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser, transforms=False)
    add_call_timeout_option(parser)
    parser.add_argument(
        "--cap",
        type=positive_int,
        default=PEEK_CAP,
        help=f"count at most this many messages per entity by peeking (default {PEEK_CAP})",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args, user_code=False)  # entities only, no app code
    apply_local_settings(args.topology, topology.connections)
    settings = Settings.from_environ(connections=topology.connections)
    check_connections(topology.namespaces, settings)
    report = read_status(topology, settings, cap=args.cap, call_timeout=args.call_timeout)
    bindings = _bindings(args.call_timeout)
    if args.json:
        document = report.as_json()
        document["bindings"] = None if bindings is None else overview_json(bindings)
        print(json.dumps(document, indent=2))
    else:
        text = render(report)
        print(text if bindings is None else "\n".join([text, *overview_lines(bindings)]))
    if report.unreachable or (bindings is not None and bindings.error is not None):
        return ExitCode.UNAVAILABLE
    return ExitCode.OK


def _bindings(call_timeout: float) -> BindingOverview | None:
    """The binding documents of the configured failover store (None: none configured)."""
    store = failover_store_from_settings(dict(os.environ), timeout=call_timeout)
    if store is None:
        return None
    try:
        return read_overview(store)
    finally:
        store.close()


def render(report: StatusReport) -> str:
    """The report as text: per task its lines (:func:`~replication.operations.task_lines`),
    then one line per heartbeat path."""
    limits = report.thresholds
    lag, beat_age = limits.lag.total_seconds(), limits.heartbeat_max_age.total_seconds()
    lines = [
        "tasks (Service Bus counts by peeking, capped; '+': at least; thresholds: lag "
        f"{lag:g} s, heartbeat {beat_age:g} s, parked {limits.parked}):"
    ]
    for task in report.tasks:
        first, *rest = task_lines(task)
        lines += [f"  {first}", *(f"      {line}" for line in rest)]
    if report.heartbeats:
        lines.append("heartbeats (newest that reached the target):")
        lines += [
            f"  {beat.origin} -> {beat.target}: {heartbeat_text(beat)}"
            for beat in report.heartbeats
        ]
    if report.captures:
        lines.append("Service Bus captures (waiting in their subscriptions):")
        lines += [f"  {capture_line(capture)}" for capture in report.captures]
    return "\n".join(lines)
