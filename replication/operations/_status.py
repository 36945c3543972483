"""``python -m replication status``: every task's figures, state and RPO, every heartbeat
path's newest heartbeat, and every Service Bus capture's backlog.

The figures are :class:`~replication.operations.FiguresReader`'s (the failover commands read
theirs the same way), the states and the RPO :func:`~replication.operations.decide`'s; this
module reads them for every task of the topology (lanes and heartbeat tasks included) and for
every heartbeat path, and gives them as one report, also as JSON (:meth:`StatusReport.as_json`).

A namespace that cannot be reached is recorded per task (``error``) rather than raised, so the
report covers everything that can be read, and not asked again in the same run; the CLI exits
``UNAVAILABLE`` when any task or heartbeat path has one.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from replication.settings import Settings
from replication.topology import Topology, capture_sources
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT

from ._figures import PEEK_CAP, CaptureReport, Clock, Count, FiguresReader, TaskReport
from ._states import PathHeartbeat, Thresholds

HeartbeatReport = PathHeartbeat
"""The newest heartbeat of one path (earlier name)."""


@dataclasses.dataclass(slots=True)
class StatusReport:
    tasks: list[TaskReport]
    heartbeats: list[PathHeartbeat]
    thresholds: Thresholds
    captures: list[CaptureReport] = dataclasses.field(default_factory=list)

    @property
    def unreachable(self) -> bool:
        return (
            any(t.error for t in self.tasks)
            or any(h.error for h in self.heartbeats)
            or any(c.error for c in self.captures)
        )

    def as_json(self) -> dict[str, Any]:
        """The report as one JSON object (``status --json``; keys in ``docs/how-to/status.md``)."""
        return {
            "thresholds": {
                "lagThresholdSeconds": self.thresholds.lag.total_seconds(),
                "heartbeatMaxAgeSeconds": self.thresholds.heartbeat_max_age.total_seconds(),
                "parkedThreshold": self.thresholds.parked,
            },
            "tasks": [_task_json(task) for task in self.tasks],
            "heartbeats": [_heartbeat_json(beat) for beat in self.heartbeats],
            "captures": [_capture_json(capture) for capture in self.captures],
            "unreachable": self.unreachable,
        }


def read_status(
    topology: Topology,
    settings: Settings,
    *,
    cap: int = PEEK_CAP,
    clock: Clock = lambda: datetime.now(UTC),
    call_timeout: timedelta | float = DEFAULT_CALL_TIMEOUT,
) -> StatusReport:
    """Read every task's figures and the heartbeats (see the module docstring), each read
    bounded by ``call_timeout``."""
    reader = FiguresReader(topology, settings, cap=cap, clock=clock, call_timeout=call_timeout)
    try:
        tasks = [reader.task(topology.resolved(spec)) for spec in topology.tasks]
        captures = [reader.capture(capture) for capture in capture_sources(topology)]
        return StatusReport(tasks, reader.heartbeats(), reader.thresholds, captures)
    finally:
        reader.close()


def task_lines(task: TaskReport) -> list[str]:
    """A task as ``status`` (and the failover commands) print it: its counts; its state and
    figures; why, unless it is replicating."""
    lines = [_counts_line(task), _figures_line(task)]
    if task.reasons:
        lines.append(f"why: {'; '.join(task.reasons)}")
    return lines


def _counts_line(task: TaskReport) -> str:
    parts = []
    if task.backlog is not None:
        parts.append(f"backlog {task.backlog}")
    elif task.backlog_unknown is not None:
        parts.append(f"backlog unknown ({task.backlog_unknown})")
    if task.dead_letters is not None:
        parts.append(f"dead-lettered {task.dead_letters}")
    for lag in task.partitions or []:
        position = "no checkpoint" if lag.checkpoint is None else f"checkpoint {lag.checkpoint}"
        parts.append(
            f"partition {lag.partition}: last {lag.last_enqueued}, {position}, lag {lag.lag}"
        )
    if task.parked is not None:
        parts.append(f"parked {task.parked}")
    if task.error:
        parts.append(f"UNREACHABLE: {task.error}")
    return f"{task.task} ({task.source}): " + ", ".join(parts)


def _figures_line(task: TaskReport) -> str:
    if task.oldest_age is not None:
        bound = "at least " if task.oldest_at_least else ""
        oldest = f"{bound}{task.oldest_age:.1f} s"
    else:
        oldest = "-" if task.backlog is not None and task.backlog.value == 0 else "unknown"
    beats = ", ".join(
        f"{b.origin} -> {b.target} {'target unreachable' if b.error else heartbeat_text(b)}"
        for b in task.heartbeats
    )
    # "no path": heartbeats are on, but none of the task's targets is a path from its source.
    heartbeat = "heartbeats off" if task.heartbeats_off else f"heartbeat {beats or 'no path'}"
    return (
        f"{task.state.value.upper()}; oldest unreplicated {oldest}; "
        f"{heartbeat}; RPO if you failed over now: {task.rpo}"
    )


def heartbeat_text(beat: PathHeartbeat) -> str:
    """A path's newest heartbeat as status prints it."""
    if beat.error:
        return f"UNREACHABLE: {beat.error}"
    if beat.age is None:
        return f"none within {beat.lookback:g} s"
    return f"age {beat.age:.1f} s"


def _count_json(count: Count | None) -> dict[str, Any] | None:
    return None if count is None else {"count": count.value, "atLeast": count.capped}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _heartbeat_json(beat: PathHeartbeat) -> dict[str, Any]:
    return {
        "origin": beat.origin,
        "target": beat.target,
        "ageSeconds": _round(beat.age),
        "lookbackSeconds": beat.lookback,
        "error": beat.error,
    }


def capture_line(capture: CaptureReport) -> str:
    """A Service Bus capture as ``status`` prints it: what waits to be written."""
    if capture.error:
        return f"{capture.capture} ({capture.source}): UNREACHABLE: {capture.error}"
    oldest = "-" if capture.oldest_age is None else f"{capture.oldest_age:.1f} s"
    return (
        f"{capture.capture} ({capture.source}): not yet captured {capture.backlog}, oldest "
        f"{oldest}, dead-lettered {capture.dead_letters}"
    )


def _capture_json(capture: CaptureReport) -> dict[str, Any]:
    return {
        "capture": capture.capture,
        "source": capture.source,
        "backlog": _count_json(capture.backlog),
        "oldestSeconds": _round(capture.oldest_age),
        "deadLettered": _count_json(capture.dead_letters),
        "error": capture.error,
    }


def _task_json(task: TaskReport) -> dict[str, Any]:
    return {
        "task": task.task,
        "source": task.source,
        "state": task.state.value,
        "reasons": list(task.reasons),
        "backlog": _count_json(task.backlog),
        "backlogUnknown": task.backlog_unknown,
        "unreplicatedMessageIds": (
            list(task.message_ids) if task.backlog is not None and task.partitions is None else None
        ),
        "oldestUnreplicatedSeconds": _round(task.oldest_age),
        "oldestUnreplicatedAtLeast": task.oldest_at_least,
        "deadLettered": _count_json(task.dead_letters),
        "parked": _count_json(task.parked),
        "partitions": None
        if task.partitions is None
        else [
            {
                "partition": p.partition,
                "lastEnqueued": p.last_enqueued,
                "checkpoint": p.checkpoint,
                "unreplicated": p.lag,
            }
            for p in task.partitions
        ],
        "heartbeats": [_heartbeat_json(beat) for beat in task.heartbeats],
        "rpo": {
            "messages": task.rpo.messages,
            "atLeast": task.rpo.at_least,
            "seconds": _round(task.rpo.seconds),
            "secondsAtLeast": task.rpo.seconds_at_least,
        },
        "error": task.error,
    }


__all__ = [
    "HeartbeatReport",
    "StatusReport",
    "capture_line",
    "heartbeat_text",
    "read_status",
    "task_lines",
]
