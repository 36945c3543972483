"""``python -m replication status``: what each task's source holds, read with the data-plane SDKs.

Prints per task (lanes and heartbeat tasks included) the backlog and dead-letter count of its
Service Bus source (counted by peeking, capped at ``--cap``: the data-plane SDK has no count),
or per partition of its event hub source the last enqueued sequence number against the
checkpoint (with ``AzureWebJobsStorage`` set), the messages it parked, and, with heartbeats
enabled, the age of the newest unread heartbeat per path. Connection settings are those of
``run`` (:mod:`replication.transport.connections`). See :mod:`replication.operations`.

Exit codes: ``OK``; ``UNAVAILABLE`` (3) when a namespace (or the checkpoint store) could not be
read, the others still reported; ``CONFIGURATION`` (2) for a bad topology or setting.
"""

from __future__ import annotations

import argparse

from replication.exit_codes import ExitCode
from replication.operations import PEEK_CAP, StatusReport, TaskReport, read_status
from replication.settings import Settings
from replication.transport.connections import check_settings

from ._options import add_topology_option, topology_of


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    parser.add_argument(
        "--cap",
        type=int,
        default=PEEK_CAP,
        help=f"count at most this many messages per entity by peeking (default {PEEK_CAP})",
    )


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args, user_code=False)  # entities only, no app code
    settings = Settings.from_environ(connections=topology.connections)
    check_settings(topology.namespaces, settings)
    report = read_status(topology, settings, cap=args.cap)
    print(render(report))
    if report.unreachable:
        return ExitCode.UNAVAILABLE
    return ExitCode.OK


def render(report: StatusReport) -> str:
    """The report as text, one line per task and per heartbeat path."""
    lines = ["tasks (Service Bus counts by peeking, capped; '+': at least):"]
    lines += [f"  {_task_line(task)}" for task in report.tasks]
    if report.heartbeats:
        lines.append("heartbeats (newest unread at the target; none: read by a running reader):")
        for beat in report.heartbeats:
            if beat.error:
                state = f"UNREACHABLE: {beat.error}"
            elif beat.age is None:
                state = "none waiting"
            else:
                state = f"age {beat.age:.1f} s"
            lines.append(f"  {beat.origin} -> {beat.target}: {state}")
    return "\n".join(lines)


def _task_line(task: TaskReport) -> str:
    parts = []
    if task.backlog is not None:
        parts.append(f"backlog {task.backlog}")
    if task.dead_letters is not None:
        parts.append(f"dead-lettered {task.dead_letters}")
    if task.partitions is not None:
        for lag in task.partitions:
            if lag.checkpoint is None:
                position = "no checkpoint"
            else:
                position = f"checkpoint {lag.checkpoint}, lag {lag.lag}"
            parts.append(f"partition {lag.partition}: last {lag.last_enqueued}, {position}")
    if task.parked is not None:
        parts.append(f"parked {task.parked}")
    if task.error:
        parts.append(f"UNREACHABLE: {task.error}")
    return f"{task.task} ({task.source}): " + ", ".join(parts)
