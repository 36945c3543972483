"""The live per-task table of ``python -m replication run`` on a terminal (``rich``).

One row per task (lanes and heartbeat tasks included): messages per second since the previous
refresh, messages, batches, parked, failures, state (``ok`` / ``FAILING``), the last error, and
the age of the latest heartbeat of the task's path (source namespace to target namespace) at
the target, when heartbeats are enabled. A run whose stdout is
not a terminal keeps the plain log lines instead (scripts and CI read those).
"""

from __future__ import annotations

import threading
import time

from rich.console import Console
from rich.live import Live
from rich.table import Table

from replication.hosts.local import LocalHost
from replication.topology import heartbeat_paths

REFRESH_SECONDS = 1.0


class LiveTable:
    """Builds the table from a running :class:`LocalHost`, keeping the rate's last sample."""

    def __init__(self, host: LocalHost) -> None:
        self._host = host
        paths = {(p.origin, p.target) for p in heartbeat_paths(host.topology)}
        self._paths = {
            task.name: [
                (task.source.namespace, target.namespace)
                for target in task.targets
                if (task.source.namespace, target.namespace) in paths
            ]
            for task in host.topology.tasks
        }
        self._beats = bool(paths)
        self._last: dict[str, tuple[float, int]] = {}

    def table(self) -> Table:
        table = Table(title="replication (Ctrl-C to stop)", expand=False)
        table.add_column("task", no_wrap=True)
        for column in ("msg/s", "messages", "parked", "failures"):
            table.add_column(column, justify="right")
        table.add_column("state")
        if self._beats:
            table.add_column("heartbeat age", justify="right")
        table.add_column("last error", overflow="fold")
        ages = self._host.heartbeats.ages()
        now = time.monotonic()
        for name, status in self._host.status.items():
            before_time, before_messages = self._last.get(name, (now, status.messages))
            elapsed = now - before_time
            rate = (status.messages - before_messages) / elapsed if elapsed > 0 else 0.0
            self._last[name] = (now, status.messages)
            beats = ", ".join(
                "-" if ages.get(path) is None else f"{ages[path]:.1f} s"
                for path in self._paths.get(name, [])
            )
            cells = [
                name,
                f"{rate:.1f}",
                str(status.messages),
                str(status.parked),
                str(status.failures),
                "[bold red]FAILING[/]" if status.failing else "[green]ok[/]",
                *([beats] if self._beats else []),
                (status.last_error or "")[:120] if status.failing else "",
            ]
            table.add_row(*cells)
        return table


def show_live(host: LocalHost, done: threading.Event | None = None) -> None:
    """Refresh the table until ``done`` is set (or Ctrl-C, which propagates)."""
    live_table = LiveTable(host)
    stop = done or threading.Event()
    with Live(live_table.table(), console=Console(), auto_refresh=False) as live:
        while not stop.wait(REFRESH_SECONDS):
            live.update(live_table.table(), refresh=True)
        live.update(live_table.table(), refresh=True)
