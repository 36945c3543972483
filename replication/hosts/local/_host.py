"""Run every task of a topology locally, the way the Functions host runs them in Azure.

:class:`LocalHost` (behind ``python -m replication run --topology FILE``) starts one supervised
receive loop per task (see :mod:`replication.transport.servicebus` and
:mod:`replication.transport.eventhubs`) that feeds batches to the task's
:class:`~replication.runtime.TaskRunner`, which sends with the same senders the Function app
uses. Connection settings are read from the environment exactly as in Azure (see
:mod:`replication.transport.connections`), so pointing ``SB_WEU`` etc. at the local emulator's
connection strings is all a local run needs; a connection string that cannot be parsed stops
the start with the setting's name. Event Hubs positions are checkpointed where
``AzureWebJobsStorage`` points (Azurite locally; see :mod:`replication.transport.eventhubs`).

A task whose source queue or subscription requires sessions runs
:data:`~replication.transport.servicebus.CONCURRENT_SESSIONS` loops, each holding one session at a
time, so the messages of a session are replicated in order and sessions proceed side by side.

No error stops a task for good: a lost connection, a restarted namespace, a message that
cannot be read, a target that is down are retried with backoff, and a task that keeps failing
is reported at ERROR and in :attr:`LocalHost.status` (``--until-idle`` then exits non-zero).
It stops on Ctrl-C, or with ``--until-idle N`` once no task has received anything for N seconds.
A task whose loops stop reporting altogether (a hang: a deadlock, an SDK call that never
returns) is reported at ERROR with where its threads are, and as failing, by a
:class:`~replication.hosts.local.StallWatch`.

With heartbeats enabled (the topology's ``heartbeats`` section, :mod:`replication.heartbeats`)
it also publishes each source namespace's heartbeat every interval and reads the heartbeats
arriving at each receiving namespace (:mod:`replication.heartbeats.local`) into
:attr:`LocalHost.heartbeats`, which the ``replication.heartbeat.age`` gauge and the live table
read. The heartbeat tasks are ordinary tasks here, but their traffic does not count as activity
for ``--until-idle``.

A Service Bus namespace with a ``capture`` section gets one more loop per topic: its capture
task (:mod:`replication.capture`), which writes each batch of the topic's
``replication-capture`` subscription where ``REPLICATION_CAPTURE_STORAGE`` points and completes
it only then; it shows in :attr:`LocalHost.status` under its name, ``capture-<ns>-<topic>``.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType

from replication.heartbeats import HeartbeatBook
from replication.heartbeats.local import start_heartbeats
from replication.runtime import TaskStatus, runner_for, supervise
from replication.settings import CAPTURE_STORAGE_SETTING, STORAGE_SETTING, Settings
from replication.topology import (
    NamespaceKind,
    Topology,
    capture_sources,
    heartbeat_paths,
    requires_session,
)
from replication.transport.connections import check_settings
from replication.transport.senders import SenderFactory
from replication.transport.servicebus import (
    CONCURRENT_SESSIONS,
    Isolation,
    run_servicebus_session_source,
    run_servicebus_source,
)

from ._stall_watch import StallWatch

logger = logging.getLogger(__name__)


class LocalHost:
    """Runs all tasks of ``topology`` in background threads until :meth:`stop`."""

    def __init__(self, topology: Topology, environ: Mapping[str, str] | None = None) -> None:
        self.topology = topology
        self.settings = Settings.from_environ(environ, connections=topology.connections)
        """The app settings, read once here (default: the process environment)."""
        check_settings(topology.namespaces, self.settings)
        self._factory = SenderFactory(topology, self.settings)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._task_threads: dict[str, list[threading.Thread]] = {}
        self.status: dict[str, TaskStatus] = {}
        self.heartbeats = HeartbeatBook()
        """Heartbeat age per path (origin, target), when the topology enables heartbeats."""
        self._heartbeat_tasks = {path.task for path in heartbeat_paths(topology)}
        self._captures = {capture.name for capture in capture_sources(topology)}
        """The capture tasks' names: their traffic keeps the host busy, never counts as
        replicated messages (``at_least``)."""

    @property
    def stats(self) -> dict[str, TaskStatus]:
        """Alias of :attr:`status` (earlier name)."""
        return self.status

    def start(self) -> LocalHost:
        checkpoints = None
        if any(
            self.topology.namespace(t.source.namespace).kind is NamespaceKind.EVENTHUBS
            for t in self.topology.tasks
        ):
            # Imported here: a topology without event hub sources does not load azure-eventhub.
            from replication.transport.eventhubs import checkpoint_store

            checkpoints = checkpoint_store(self.settings)
            if checkpoints is None:
                logger.warning(
                    "no %s setting: Event Hubs positions are not checkpointed and a restart "
                    "replays every partition from the beginning",
                    STORAGE_SETTING,
                )
        for task in self.topology.tasks:
            # Locks are renewed here (LockKeeper), so a send may take as long as it takes.
            runner = runner_for(
                self.topology,
                self.topology.resolved(task),
                self._factory,
                settings=self.settings,
                bound_sends=False,
            )
            namespace = self.topology.namespace(task.source.namespace)
            status = self.status[task.name] = TaskStatus()
            receive: Callable[..., None] = run_servicebus_source
            loops = 1
            if namespace.kind is NamespaceKind.EVENTHUBS:
                from replication.transport.eventhubs import run_event_hub_source

                receive = functools.partial(run_event_hub_source, checkpoints=checkpoints)
            elif requires_session(self.topology, task.source):
                receive, loops = run_servicebus_session_source, CONCURRENT_SESSIONS
            for number in range(loops):
                # A Service Bus loop's isolation is its own and outlives its restarts.
                own: dict[str, object] = (
                    {"isolation": Isolation()} if namespace.kind is NamespaceKind.SERVICEBUS else {}
                )
                loop = functools.partial(
                    receive,
                    namespace,
                    task.source,
                    runner,
                    self._stop,
                    status,
                    settings=self.settings,
                    **own,
                )
                suffix = f"-{number}" if loops > 1 else ""
                self._supervised(task.name, loop, status, f"task-{task.name}{suffix}")
        self._start_captures()
        self._threads += start_heartbeats(
            self.topology, self._factory, self.heartbeats, self._stop, self.settings
        )
        self._threads.append(StallWatch(self.status, self._threads_of, self._stop).start())
        return self

    def _start_captures(self) -> None:
        """One supervised receive loop per Service Bus capture (:mod:`replication.capture`):
        each batch of its subscription is written, then completed."""
        captures = capture_sources(self.topology)
        if not captures:
            return
        # Imported here: the blob SDK loads only for a topology with a Service Bus capture.
        from replication.capture import CaptureRunner
        from replication.transport.capture import capture_store

        if self.settings.capture_storage.secret() is None:
            logger.warning(
                "%s is not set: the captures write to their capture sections' storage accounts "
                "with this machine's identity (for a local run, set it to a folder or to "
                "Azurite's connection string)",
                CAPTURE_STORAGE_SETTING,
            )
        for capture in captures:
            store = capture_store(capture.spec, self.settings.capture_storage)
            status = self.status[capture.name] = TaskStatus()
            loop = functools.partial(
                run_servicebus_source,
                self.topology.namespace(capture.source.namespace),
                capture.source,
                CaptureRunner(capture, store),
                self._stop,
                status,
                settings=self.settings,
                isolation=Isolation(),
            )
            self._supervised(capture.name, loop, status, f"task-{capture.name}")

    def _supervised(
        self, name: str, loop: Callable[[], None], status: TaskStatus, thread: str
    ) -> None:
        """Start ``loop`` of task ``name`` in a thread of its own, restarted by
        :func:`~replication.runtime.supervise` whenever it fails."""
        started = threading.Thread(
            target=supervise, args=(name, loop, self._stop, status), name=thread, daemon=True
        )
        started.start()
        self._threads.append(started)
        self._task_threads.setdefault(name, []).append(started)

    def _threads_of(self, task: str) -> list[threading.Thread]:
        """The threads of ``task``: its loops, and an event hub's per-partition loops."""
        partition = re.compile(rf"{re.escape(task)}-p\w+")
        return self._task_threads.get(task, []) + [
            thread for thread in threading.enumerate() if partition.fullmatch(thread.name)
        ]

    def failing(self) -> dict[str, TaskStatus]:
        """The tasks whose last attempt failed (not making progress)."""
        return {name: status for name, status in self.status.items() if status.failing}

    def wait_until_idle(self, idle_seconds: float, timeout: float, *, at_least: int = 0) -> bool:
        """Block until the tasks received ``at_least`` messages in all and then nothing more
        for ``idle_seconds`` (False on timeout). ``at_least`` keeps a slow start from passing
        for quiet."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            traffic = [s for n, s in self.status.items() if n not in self._heartbeat_tasks]
            last = max((s.last_activity for s in traffic), default=0.0)
            received = sum(
                s.messages for n, s in self.status.items()
                if n not in self._heartbeat_tasks and n not in self._captures
            )  # fmt: skip
            if received >= at_least and time.monotonic() - last >= idle_seconds:
                return True
            time.sleep(0.2)
        return False

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=15)
        self._factory.close()

    def __enter__(self) -> LocalHost:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["LocalHost"]
