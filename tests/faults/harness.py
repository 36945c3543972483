"""The fault suite's tools: one emulator process per namespace, and ways to break things.

Each namespace of a test topology is served by its own ``python -m emulator`` process on a
fixed port with ``--data-dir``, so a test can kill it (SIGKILL: a crash), stop it (SIGTERM),
freeze it (SIGSTOP: a namespace that accepts connections and answers nothing) and start it
again on the same port with what it had persisted, while the replicator keeps running against
the same connection strings. Every wait here is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient
from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusClient,
    ServiceBusMessage,
)
from azure.servicebus.exceptions import (
    MessageLockLostError,
    MessageSizeExceededError,
    OperationTimeoutError,
    SessionLockLostError,
)

from emulator._cli import READY_LINE
from replication.drill._processes import await_output
from replication.hosts.local import thread_stacks
from replication.render.emulator_config import emulator_config
from replication.topology import Topology, parse_topology
from replication.transport.servicebus import entity_receiver, peek_pages

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0
"""A deadline for an emulator to listen, only reached when it fails: under the full run's load
(load average 10 to 15 on 2 cores) a start has taken more than 30 s."""
PORT_ATTEMPTS = 3
"""Ports a node's first start tries when the one it was given is taken before it binds."""
READY = re.compile(re.escape(READY_LINE.encode()))
"""The emulator's last line once it listens."""

SESSION_READERS = 4
"""How many sessions :meth:`Cluster.drain_sessions` reads side by side."""

SESSION_TAIL_SECONDS = 0.5
"""How long :meth:`Cluster.drain_sessions` waits for more of a held session's messages before it
lets the session go (what comes later is taken again with the session, in order)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def eventually(
    check: Callable[[], bool], *, timeout: float, interval: float = 0.25, what: str = "condition"
) -> float:
    """Poll ``check`` until it holds; returns the seconds it took.

    On timeout the AssertionError carries where this process's other threads are: a
    :class:`~replication.hosts.local.LocalHost` runs its tasks in-process, so a task that
    stopped making progress shows where it hangs (a failure that happens once in many loaded
    runs is then diagnosed from the CI log, not re-run until it shows again)."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            stacks = other_threads_stacks()
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s:\n{stacks}")
        time.sleep(interval)
    return time.monotonic() - start


def other_threads_stacks() -> str:
    """The stack of every thread of this process but the calling one."""
    current = threading.current_thread()
    return thread_stacks([thread for thread in threading.enumerate() if thread is not current])


class Node:
    """One namespace served by its own emulator process on a fixed port."""

    def __init__(self, name: str, document: dict[str, Any], workdir: Path) -> None:
        self.name = name
        self.port = free_port()
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.workdir / "config.json"
        self.config_path.write_text(json.dumps(document), encoding="utf-8")
        self.log_path = self.workdir / "emulator.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.started = False
        """Whether this node ever listened: from then on its port is the one clients know."""

    @property
    def connection_string(self) -> str:
        return (
            f"Endpoint=sb://localhost:{self.port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
        )

    def start(self) -> None:
        """Start the emulator on this node's port and wait until it prints that it listens.

        ``free_port`` only found the port free: another process may take it before the
        emulator binds it (a full run starts hundreds of servers side by side). The first start
        then moves to another port; a restart keeps the port its clients know, and fails.
        Waiting for the emulator's own ready line, not for the port to accept a connection,
        is what tells the two apart: a port taken by another server accepts connections too.
        """
        for _ in range(PORT_ATTEMPTS):
            failure = self._launch()
            if failure is None:
                self.started = True
                return
            if self.started or "Address already in use" not in failure:
                raise RuntimeError(f"emulator for {self.name} did not start:\n{failure}")
            self.port = free_port()
        raise RuntimeError(f"emulator for {self.name}: no free port in {PORT_ATTEMPTS} tries")

    def _launch(self) -> str | None:
        """Run the emulator; None once it is ready, else the end of its log."""
        document = json.loads(self.config_path.read_text(encoding="utf-8"))
        for section in ("Namespaces", "NamespaceConfig"):
            for namespace in document["UserConfig"].get(section, []):
                namespace["Port"] = self.port
        self.config_path.write_text(json.dumps(document), encoding="utf-8")
        since = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "emulator",
                "--config",
                str(self.config_path),
                "--data-dir",
                str(self.workdir / "data"),
            ],
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
        log.close()
        try:
            ready, printed = await_output(
                self.process, self.log_path, since, READY, timeout=START_TIMEOUT
            )
        except TimeoutError as error:
            return str(error)
        return None if ready is not None else printed[-2000:]

    def kill(self) -> None:
        """SIGKILL: the namespace crashes; what it persisted survives."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM: a clean shutdown (everything saved)."""
        self._signal(signal.SIGTERM)

    def pause(self) -> None:
        """SIGSTOP: connections stay open and nothing answers (a hung namespace)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        self.kill()
        self.start()

    def _signal(self, kind: signal.Signals) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.send_signal(kind)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Cluster:
    """Every namespace of a topology on its own emulator node, plus SDK helpers."""

    def __init__(
        self,
        document: dict[str, Any],
        workdir: Path,
        *,
        edit_config: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.document = document
        self.topology: Topology = parse_topology(document)
        self.topology_path = workdir / "topology.json"
        self.topology_path.write_text(json.dumps(document, indent=2), encoding="utf-8")
        config = emulator_config(self.topology)["UserConfig"]
        self.nodes: dict[str, Node] = {}
        for namespace in config.get("Namespaces", []):
            self._add(namespace["Name"], {"Namespaces": [namespace]}, workdir, edit_config)
        for namespace in config.get("NamespaceConfig", []):
            self._add(namespace["Name"], {"NamespaceConfig": [namespace]}, workdir, edit_config)

    def _add(
        self,
        name: str,
        section: dict[str, Any],
        workdir: Path,
        edit_config: Callable[[str, dict[str, Any]], None] | None,
    ) -> None:
        document = {"UserConfig": {**section, "Logging": {"Type": "Console"}}}
        if edit_config is not None:
            edit_config(name, document)
        self.nodes[name] = Node(name, document, workdir)

    def __enter__(self) -> Cluster:
        for node in self.nodes.values():
            node.start()
        return self

    def __exit__(self, *_: object) -> None:
        for node in self.nodes.values():
            node.stop()

    @property
    def environ(self) -> dict[str, str]:
        """The app settings a replicator needs: one connection string per namespace."""
        return {
            self.topology.namespace(name).connection: node.connection_string
            for name, node in self.nodes.items()
        }

    def client(self, namespace: str) -> ServiceBusClient:
        return ServiceBusClient.from_connection_string(self.nodes[namespace].connection_string)

    def publish(self, namespace: str, topic: str, messages: Sequence[ServiceBusMessage]) -> None:
        """Send in order, in as few batches as fit."""
        with self.client(namespace) as client, client.get_topic_sender(topic) as sender:
            batch = sender.create_message_batch()
            for message in messages:
                try:
                    batch.add_message(message)
                except MessageSizeExceededError:
                    sender.send_messages(batch)
                    batch = sender.create_message_batch()
                    batch.add_message(message)
            if len(batch):
                sender.send_messages(batch)

    def drain(
        self,
        namespace: str,
        entity: str,
        subscription: str | None = None,
        *,
        dead_letter: bool = False,
        idle: float = 1.5,
    ) -> list[Any]:
        """Receive and complete everything until ``idle`` seconds pass without a message."""
        received: list[Any] = []
        with (
            self.client(namespace) as client,
            entity_receiver(client, entity, subscription, dead_letter=dead_letter) as receiver,
        ):
            while batch := receiver.receive_messages(max_message_count=100, max_wait_time=idle):
                for message in batch:
                    received.append(message)
                    receiver.complete_message(message)
        return received

    def drain_sessions(
        self, namespace: str, entity: str, subscription: str | None = None, *, idle: float = 1.5
    ) -> dict[str, list[Any]]:
        """Receive and complete every session of a session-enabled queue or subscription, each
        in its order, until no session with messages is left: messages by SessionId.

        :data:`SESSION_READERS` readers take sessions side by side (each attach and each close
        waits about half a second in the SDK); a session is held by one of them at a time, so
        its messages are appended in order. ``idle`` is how long a reader's attach waits for a
        session with messages that nobody holds; "none" ends that reader at once, because its
        client retries nothing (the SDK retries a timed-out attach like a failure: three more
        waits with back-off, about 20 s per drain; any other failure fails the drain). Within a
        session a receive that waits :data:`SESSION_TAIL_SECONDS` for nothing ends it: a message
        that reaches the receiver later is not lost, it stays locked with the session, comes
        back when the receiver closes, and the next attach takes the session again. A session
        whose lock expired before a message was completed (a loaded machine, a short lock) is
        left at that message, which is not recorded: the session is taken again from it, in
        order; its SessionId stays in the result, so a caller asking "was anything there?" hears
        yes."""
        sessions: dict[str, list[Any]] = {}
        with ThreadPoolExecutor(SESSION_READERS) as pool:
            readers = [
                pool.submit(self._read_sessions, namespace, entity, subscription, idle, sessions)
                for _ in range(SESSION_READERS)
            ]
            for reader in readers:
                reader.result()
        return sessions

    def _read_sessions(
        self,
        namespace: str,
        entity: str,
        subscription: str | None,
        idle: float,
        sessions: dict[str, list[Any]],
    ) -> None:
        """One reader of :meth:`drain_sessions`: the next free session, until none is left."""
        connection = self.nodes[namespace].connection_string
        with ServiceBusClient.from_connection_string(connection, retry_total=0) as client:
            while True:
                receiver = entity_receiver(
                    client, entity, subscription, session_id=NEXT_AVAILABLE_SESSION, wait=idle
                )
                try:
                    receiver.__enter__()
                except OperationTimeoutError:
                    receiver.close()
                    return
                with receiver:
                    try:
                        batch = receiver.receive_messages(max_message_count=100)
                    except OperationTimeoutError:  # attached, then no session came
                        return
                    session_id = str(receiver.session.session_id)
                    received = sessions.setdefault(session_id, [])
                    while batch and _complete_in_order(receiver, batch, received):
                        batch = receiver.receive_messages(
                            max_message_count=100, max_wait_time=SESSION_TAIL_SECONDS
                        )

    def count(
        self, namespace: str, topic: str, subscription: str, *, dead_letter: bool = False
    ) -> int:
        """Messages waiting in a subscription or its dead-letter queue (peeked, nothing
        settled)."""
        return len(self.peek(namespace, topic, subscription, dead_letter=dead_letter))

    def peek(
        self,
        namespace: str,
        entity: str,
        subscription: str | None = None,
        *,
        dead_letter: bool = False,
    ) -> list[Any]:
        """Every message in a queue or subscription (or its dead-letter queue), in order,
        locked ones included: peeked, nothing settled. What an entity holds once nothing
        writes to it any more, without :meth:`drain`'s wait for a quiet ``idle``."""
        with (
            self.client(namespace) as client,
            entity_receiver(client, entity, subscription, dead_letter=dead_letter) as receiver,
        ):
            return [message for page in peek_pages(receiver) for message in page]


def _complete_in_order(receiver: Any, batch: Sequence[Any], received: list[Any]) -> bool:
    """Complete ``batch``'s messages one by one, appending each to ``received`` once settled;
    False at the first whose lock was lost (it and the ones after it come back with the
    session)."""
    for message in batch:
        try:
            receiver.complete_message(message)
        except (MessageLockLostError, SessionLockLostError):
            return False
        received.append(message)
    return True


def message_ids(messages: Sequence[Any]) -> Counter[str]:
    return Counter(str(message.message_id) for message in messages)


def topology_document(
    namespaces: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    lock: str = "PT5S",
    max_delivery_count: int = 40,
    tolerance: str = "PT2M",
    duplicate_detection: bool = False,
    premium: Sequence[str] = (),
    sessions: bool = False,
) -> dict[str, Any]:
    """Service Bus namespaces with a topic ``orders`` (a TrueFilter ``audit`` subscription that
    shows what arrived) and a ``replication-parked`` queue; one all-active task per (source,
    target) pair, reading its own subscription ``to-<target>`` with short locks. With
    ``sessions`` the ``to-*`` subscriptions require sessions, and a session-enabled ``posting``
    subscription is what an ordered consumer at each namespace reads."""
    session_settings = {"requiresSession": True} if sessions else {}
    document: dict[str, Any] = {"namespaces": [], "tasks": []}
    for name in namespaces:
        outgoing = [target for source, target in pairs if source == name]
        document["namespaces"].append(
            {
                "name": name,
                "region": name,
                "kind": "servicebus",
                "sku": "Premium" if name in premium else "Standard",
                "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
                "connection": f"SB_{name.upper()}",
                "queues": [{"name": "replication-parked"}],
                "topics": [
                    {
                        "name": "orders",
                        "requiresDuplicateDetection": duplicate_detection,
                        "subscriptions": [
                            {"name": "audit"},
                            *([{"name": "posting", **session_settings}] if sessions else []),
                            *(
                                {
                                    "name": f"to-{target}",
                                    "lockDuration": lock,
                                    "maxDeliveryCount": max_delivery_count,
                                    **session_settings,
                                }
                                for target in outgoing
                            ),
                        ],
                    }
                ],
            }
        )
    for source, target in pairs:
        document["tasks"].append(
            {
                "name": f"{source}-to-{target}",
                "pattern": "all_active",
                "source": {"namespace": source, "entity": "orders", "subscription": f"to-{target}"},
                "targets": [{"namespace": target, "entity": "orders"}],
                "deadLetterTarget": {"namespace": source, "entity": "replication-parked"},
                "retry": {
                    "minBackoff": "PT0.2S",
                    "maxBackoff": "PT1S",
                    "outageTolerance": tolerance,
                },
            }
        )
    return document


def read_partition(
    connection: str, hub: str, partition: str, *, idle: float, count: int | None = None
) -> list[EventData]:
    """A partition's events from its start, read with ``$Default`` independently of the code
    under test, until ``count`` are read or the partition stays idle for ``idle`` seconds."""
    received: list[EventData] = []
    with EventHubConsumerClient.from_connection_string(
        connection, consumer_group="$Default", eventhub_name=hub
    ) as consumer:

        def on_event_batch(_context: Any, events: list[EventData]) -> None:
            received.extend(events)
            if not events or (count is not None and len(received) >= count):
                consumer.close()

        consumer.receive_batch(
            on_event_batch=on_event_batch,
            partition_id=partition,
            starting_position="-1",
            max_batch_size=100,
            max_wait_time=idle,
        )
    return received


def hand_made_delivery_count(count: int) -> Callable[[str, dict[str, Any]], None]:
    """A ``Cluster`` ``edit_config`` that deploys every replication subscription (``to-*``)
    with ``maxDeliveryCount`` ``count``, as if set by hand: below what the topology's
    validator accepts for the task's outage tolerance."""

    def edit(name: str, document: dict[str, Any]) -> None:
        for namespace in document["UserConfig"].get("Namespaces", []):
            for topic in namespace.get("Topics", []):
                for subscription in topic.get("Subscriptions", []):
                    if subscription["Name"].startswith("to-"):
                        subscription.setdefault("Properties", {})["MaxDeliveryCount"] = count

    return edit


def event_hubs_document(*, partitions: int, consumer_group: str) -> dict[str, Any]:
    """Two Event Hubs namespaces ``east`` and ``west`` with an event hub ``telemetry`` of
    ``partitions`` partitions; one all-active task ``east-to-west`` reading it with
    ``consumer_group`` and parking in the queue ``replication-parked`` of a Service Bus
    namespace ``ops`` (an event hub has no dead-letter queue)."""
    return {
        "namespaces": [
            {
                "name": name, "region": name, "kind": "eventhubs",
                "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
                "connection": f"EH_{name.upper()}",
                "eventHubs": [{"name": "telemetry", "partitionCount": partitions}],
            }
            for name in ("east", "west")
        ] + [
            {
                "name": "ops", "region": "east", "kind": "servicebus",
                "fullyQualifiedNamespace": "ops.servicebus.windows.net", "connection": "SB_OPS",
                "queues": [{"name": "replication-parked"}],
            }
        ],
        "tasks": [
            {
                "name": "east-to-west", "pattern": "all_active",
                "source": {
                    "namespace": "east", "entity": "telemetry", "consumerGroup": consumer_group
                },
                "targets": [{"namespace": "west", "entity": "telemetry"}],
                "deadLetterTarget": {"namespace": "ops", "entity": "replication-parked"},
                "retry": {"minBackoff": "PT0.2S", "maxBackoff": "PT1S"},
            }
        ],
    }  # fmt: skip


def originals(prefix: str, count: int, *, size: int = 64) -> list[ServiceBusMessage]:
    return [
        ServiceBusMessage(b"x" * size, message_id=f"{prefix}-{i}", application_properties={"n": i})
        for i in range(count)
    ]


def merged(*settings: Mapping[str, str]) -> dict[str, str]:
    result: dict[str, str] = {"PATH": os.environ.get("PATH", "")}
    for item in settings:
        result.update(item)
    return result


@contextlib.contextmanager
def replicator_process(cluster: Cluster, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m replication run`` as a user starts it, against the cluster."""
    with log.open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "replication", "run", "--topology", str(cluster.topology_path)],
            cwd=ROOT,
            env=merged(os.environ, cluster.environ),
            stdout=output,
            stderr=output,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def failover_consumer(
    log: Path,
    *,
    app: str,
    primary: str,
    secondary: str,
    storage: str,
    work_seconds: float = 0.0,
    call_timeout: float | None = None,
) -> subprocess.Popen[bytes]:
    """``examples/failover_consumer.py`` of ``orders``/``billing`` as its own process (so that
    a test can SIGKILL it), its output appended to ``log``."""
    env = {
        **os.environ,
        "SB_PRIMARY": primary,
        "SB_SECONDARY": secondary,
        "FAILOVER_STORAGE": storage,
        "PYTHONPATH": str(ROOT),
    }
    arguments = ["--app", app, "--entity", "orders", "--subscription", "billing"]
    arguments += ["--work-seconds", str(work_seconds)]
    if call_timeout is not None:
        arguments += ["--call-timeout", str(call_timeout)]
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "examples" / "failover_consumer.py"), *arguments],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.DEVNULL,
        )
