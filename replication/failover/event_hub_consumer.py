"""The failover consumer for Event Hubs: the application's batch handler, fed from the active
namespace, with checkpoints translated when it moves.

:class:`EventHubFailoverConsumer` reads every partition of one event hub and consumer group in
the namespace the binding store names for it, and calls the application's handler with each
partition's batches minus the events the processed-message log knows. After the handler
returns, the consumer records the events, persists its log and partition positions
(:class:`~replication.failover._state.ConsumerState`), and only then moves the partition's
checkpoint in the application's checkpoint store::

    consumer = EventHubFailoverConsumer.event_hub(
        app="dashboard", entity="telemetry", consumer_group="dashboard",
        namespaces={"primary-events": CS1, "secondary-events": CS2},
        store=FailoverStore.from_connection_string(STORAGE),
        checkpoint_connection_string=STORAGE)
    consumer.run(lambda partition, events: handle(events), stop_event)

When the binding store moves it from namespace A to B, it closes its readers on A, writes B's
start checkpoints (:func:`~replication.failover._checkpoints.start_plan`: by time when B is a
replica of A, B's own checkpoints when A is a replica of B) and starts reading B. A consumer
restarted between the two finds the namespace it last read in its persisted state and finishes
the translation.

One consumer reads all partitions of its consumer group: the translation needs a position for
every partition, so several instances sharing a consumer group (the SDK's load balancing) are
not supported; run standbys that take over through the binding store instead.

Copies of one event in one batch, or in batches of two partitions handled at the same time (a
publisher's two attempts), are handed to the handler once. A partition's checkpoint moves only
after the log entries of its batch are durable: while the store cannot be written, the
partition's reader waits (back-pressure: it reads nothing more), trying again every second,
and ``counters`` count it (``log_write_failures``, ``held_receives``). Reading the partition ids
and closing the readers are bounded by ``call_timeout`` (default 10 s).

:class:`AsyncEventHubFailoverConsumer` runs the same readers in worker threads and awaits an
``async`` handler on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from datetime import UTC, datetime, timedelta

from replication.runtime import describe
from replication.transport.connections import NamespaceAccess
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT, seconds
from replication.transport.failover import (
    DEFAULT_STORE_TIMEOUT,
    BlobFailoverStore,
    ConsumerCheckpoints,
    LastEnqueued,
    PartitionReaders,
    ReceivedEvent,
    checkpoint_store,
    clear_checkpoints,
    event_facts,
    partition_ids,
)

from ._bindings import Role
from ._checkpoints import DEFAULT_SKEW_ALLOWANCE, StartKind, start_plan
from ._follower import DEFAULT_POLL_INTERVAL, BindingFollower
from ._origin import origin_of
from ._processed import DEFAULT_MAX_ENTRIES, DEFAULT_RETENTION, ProcessedLog, to_millis
from ._state import ConsumerState, PartitionPosition
from .consumers import ConsumerCounters, client_key

logger = logging.getLogger(__name__)

Access = str | NamespaceAccess
DEFAULT_CHECKPOINT_CONTAINER = "replication-failover-checkpoints"
Handler = Callable[[str, list[ReceivedEvent]], None]
"""(partition id, events to process) -> None; raising leaves the batch unrecorded."""


class EventHubFailoverConsumer:
    """Reads the active namespace's event hub partitions (see the module docstring)."""

    def __init__(
        self,
        follower: BindingFollower,
        state: ConsumerState,
        *,
        namespaces: Mapping[str, Access],
        hub: str,
        consumer_group: str,
        checkpoints: ConsumerCheckpoints,
        replicated_from: Mapping[str, str],
        skew_allowance: timedelta = DEFAULT_SKEW_ALLOWANCE,
        max_batch_size: int = 100,
        max_wait_time: float = 1.0,
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.follower = follower
        self.call_timeout = seconds(call_timeout)
        self.state = state
        self.namespaces = dict(namespaces)
        self.hub = hub
        self.consumer_group = consumer_group
        self._checkpoints = checkpoints
        self.replicated_from = dict(replicated_from)
        self.skew_allowance = skew_allowance
        self.max_batch_size = max_batch_size
        self.max_wait_time = max_wait_time
        self.counters = ConsumerCounters()
        self.last_error: str | None = None
        self.namespace: str | None = None
        self._lock = threading.Lock()
        self._failure: BaseException | None = None
        self._in_flight: set[str] = set()
        self._stopping = threading.Event()

    @classmethod
    def event_hub(
        cls,
        *,
        app: str,
        entity: str,
        namespaces: Mapping[str, Access],
        checkpoint_connection_string: str,
        checkpoint_container: str = DEFAULT_CHECKPOINT_CONTAINER,
        consumer_group: str = "$Default",
        store: BlobFailoverStore | None = None,
        instance: str | None = None,
        replicated_from: Mapping[str, str] | None = None,
        skew_allowance: timedelta = DEFAULT_SKEW_ALLOWANCE,
        poll_interval: timedelta = DEFAULT_POLL_INTERVAL,
        retention: timedelta = DEFAULT_RETENTION,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_batch_size: int = 100,
        max_wait_time: float = 1.0,
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> EventHubFailoverConsumer:
        """A consumer of event hub ``entity`` in ``consumer_group``. ``replicated_from`` maps
        each replica namespace to its source (default: every namespace after the first is a
        replica of the first, as in an active-passive pair). Checkpoints go to the SDK's blob
        checkpoint store in ``checkpoint_container``."""
        names = list(namespaces)
        follower = BindingFollower(
            store,
            app=app,
            instance=instance,
            entity=entity,
            role=Role.CONSUME,
            namespaces=names,
            poll_interval=poll_interval,
        )
        log = ProcessedLog(retention=retention, max_entries=max_entries)
        state = ConsumerState(log, store, client_key(app, instance, entity, consumer_group))
        return cls(
            follower,
            state,
            namespaces=namespaces,
            hub=entity,
            consumer_group=consumer_group,
            checkpoints=checkpoint_store(
                checkpoint_connection_string,
                checkpoint_container,
                timeout=store.timeout if store is not None else DEFAULT_STORE_TIMEOUT,
            ),
            replicated_from=(
                replicated_from
                if replicated_from is not None
                else dict.fromkeys(names[1:], names[0])
            ),
            skew_allowance=skew_allowance,
            max_batch_size=max_batch_size,
            max_wait_time=max_wait_time,
            call_timeout=call_timeout,
        )

    @property
    def log(self) -> ProcessedLog:
        return self.state.log

    def run(self, handler: Handler, stop: threading.Event) -> None:
        """Feed ``handler`` until ``stop`` is set, following the binding store.

        Raises:
            ReplicationError: the persisted log cannot be read at start.
        """
        self.state.load()
        self._stopping = stop
        while not stop.is_set():
            target = self.follower.namespace()
            try:
                readers = self._start(target, handler)
            except Exception as error:
                self._failed(f"starting on {target}", error)
                stop.wait(1.0)
                continue
            try:
                while not stop.wait(0.2):
                    if self.follower.namespace() != target:
                        break
                    if self._failure is not None or not readers.alive:
                        failure = self._failure or readers.error
                        self._failure = None
                        self._failed(f"reading {target}", failure)
                        stop.wait(1.0)
                        break
            finally:
                readers.close()
        self.follower.close()
        self.state.checkpoint()

    def _start(self, target: str, handler: Handler) -> PartitionReaders:
        previous = self.state.active
        if previous is not None and previous != target:
            self._translate(previous, target)
            self.counters.switches += 1
        self.state.activate(target)
        self.state.checkpoint()
        readers = PartitionReaders(
            self.namespaces[target],
            self.hub,
            self.consumer_group,
            self._checkpoints,
            lambda partition, events, last: self._handle(target, handler, partition, events, last),
            start=self.state.starts.get(target),
            max_batch_size=self.max_batch_size,
            max_wait_time=self.max_wait_time,
            call_timeout=self.call_timeout,
        )
        self.namespace = target
        if self.last_error is not None:
            logger.info("%s: reading %s again", self.hub, target)
            self.last_error = None
        return readers

    def _translate(self, source: str, target: str) -> None:
        count = len(
            partition_ids(
                self.namespaces[target], self.hub, self.consumer_group, timeout=self.call_timeout
            )
        )
        plan = start_plan(
            source,
            target,
            replicated_from=self.replicated_from,
            positions=list(self.state.positions.values()),
            partition_count=count,
            skew_allowance=self.skew_allowance,
            publishers_since=self._publishers_moved(source, target),
        )
        logger.info("%s: moving from %s to %s: %s", self.hub, source, target, plan.reason)
        if plan.kind is StartKind.BY_TIME:
            removed = clear_checkpoints(
                self._checkpoints, self.namespaces[target], self.hub, self.consumer_group
            )
            self.state.start_at(target, plan.start)
            logger.info("%s: %d stale checkpoints on %s removed", self.hub, removed, target)

    def _publishers_moved(self, source: str, target: str) -> datetime | None:
        """When the binding store last started moving publishers from source to target."""
        document = self.follower.document
        if document is None:
            return None
        records = [*document.history, *([document.switch] if document.switch else [])]
        moves = [r.started_at for r in records if (r.source, r.target) == (source, target)]
        return max(moves, default=None)

    def _handle(
        self,
        namespace: str,
        handler: Handler,
        partition: str,
        events: list[ReceivedEvent],
        last: LastEnqueued | None,
    ) -> ReceivedEvent | None:
        keep = []
        seen: set[str] = set()
        for event in events:
            facts = event_facts(event)
            origin = origin_of(
                facts.properties,
                namespace=namespace,
                enqueued_time=facts.enqueued_time,
                sequence=facts.sequence,
            )
            decision = self.log.decide(facts.message_id, origin)
            with self._lock:
                # A copy of an event of this batch, or of one another partition's handler has
                # now: handed to the application once.
                copy = facts.message_id is not None and (
                    facts.message_id in seen or facts.message_id in self._in_flight
                )
                if decision.skip or copy:
                    self.counters.skipped += 1
                    continue
                self.counters.received += 1
                self.counters.unverified += int(decision.unverified)
                if facts.message_id is not None:
                    seen.add(facts.message_id)
                    self._in_flight.add(facts.message_id)
            keep.append((event, facts.message_id, origin))
        try:
            if keep:
                try:
                    handler(partition, [event for event, _, _ in keep])
                except Exception as error:  # the batch is read again from the last checkpoint
                    self._failure = error
                    return None
            for _, message_id, origin in keep:
                self.log.record(message_id, origin)
        finally:
            with self._lock:
                self._in_flight -= seen
        self.state.advance(self._position(namespace, partition, events, last))
        if not self._persist():
            return None  # stopping before the log was durable: the checkpoint stays
        return events[-1] if events else None

    def _persist(self) -> bool:
        """Persist the log, waiting (and reading nothing more in this partition) while the
        store cannot be written (the state logs the outage); False when the consumer stops
        first."""
        while not self.state.checkpoint():
            with self._lock:
                self.counters.log_write_failures += 1
                self.counters.held_receives += 1
            if self._stopping.wait(1.0):
                return False
        return True

    def _position(
        self,
        namespace: str,
        partition: str,
        events: list[ReceivedEvent],
        last: LastEnqueued | None,
    ) -> PartitionPosition:
        if events:
            newest = events[-1]
            sequence = newest.sequence_number
            return PartitionPosition(
                namespace,
                partition,
                -1 if sequence is None else sequence,
                str(newest.offset),
                to_millis(newest.enqueued_time or datetime.now(UTC)),
            )
        # Nothing arrived within the wait: everything enqueued so far is handled (the clock
        # is this host's; the skew allowance covers its difference to the namespace's).
        known = self.state.positions.get((namespace, partition))
        sequence = last.sequence if last is not None else (known.sequence if known else -1)
        offset = last.offset if last is not None else (known.offset if known else "-1")
        return PartitionPosition(
            namespace, partition, sequence, offset, to_millis(datetime.now(UTC))
        )

    def _failed(self, what: str, error: BaseException | None) -> None:
        self.counters.receive_failures += 1
        text = f"{what}: {describe(error) if error else 'stopped'}"
        if text != self.last_error:
            logger.warning("%s: %s; trying again", self.hub, text)
        self.last_error = text


class AsyncEventHubFailoverConsumer:
    """:class:`EventHubFailoverConsumer` for asyncio applications: the SDK readers run in
    worker threads, and each batch awaits the ``async`` handler on the caller's loop."""

    def __init__(self, consumer: EventHubFailoverConsumer) -> None:
        self.consumer = consumer

    @classmethod
    def event_hub(cls, **options: object) -> AsyncEventHubFailoverConsumer:
        """Takes the keyword arguments of :meth:`EventHubFailoverConsumer.event_hub`."""
        return cls(EventHubFailoverConsumer.event_hub(**options))  # type: ignore[arg-type]

    async def run(
        self,
        handler: Callable[[str, list[ReceivedEvent]], Coroutine[object, object, None]],
        stop: asyncio.Event,
    ) -> None:
        """Feed ``handler`` until ``stop`` is set."""
        loop = asyncio.get_running_loop()
        stopped = threading.Event()

        def call(partition: str, events: list[ReceivedEvent]) -> None:
            asyncio.run_coroutine_threadsafe(handler(partition, events), loop).result()

        async def relay() -> None:
            await stop.wait()
            stopped.set()

        relay_task = asyncio.create_task(relay())
        try:
            await asyncio.to_thread(self.consumer.run, call, stopped)
        finally:
            stopped.set()
            relay_task.cancel()


__all__ = [
    "DEFAULT_CHECKPOINT_CONTAINER",
    "AsyncEventHubFailoverConsumer",
    "EventHubFailoverConsumer",
]
