"""The local host's Event Hubs receive loops (``python -m replication run``).

In Azure the Functions host reads the event hub and calls the task's function with a batch.
Locally these loops do the same with the SDK, with the trigger's semantics, and never give up:
one consumer per partition, each in its own thread under
:func:`~replication.runtime.supervise`, so a partition that cannot make progress never holds
back another. The position advances only after the runner returned; a failing batch is retried
with the one backoff policy (5 s to 5 min), like the retry policy of the Functions trigger. An
event that cannot be read is parked through the runner (an event hub has no dead-letter queue)
with everything that converts (:func:`~replication.transport.eventhubs.salvaged_event`), and the
position moves past it. Positions are checkpointed in blob storage when the
``AzureWebJobsStorage`` setting names an account (Azurite locally; see
:func:`~replication.transport.eventhubs.checkpoint_store`); without it a restarted run starts
from the beginning of every partition.

azure-eventhub 5.15.1 has the same decoder tables as azure-servicebus: an event with a value
the SDK cannot decode fails inside the SDK (see :mod:`replication.transport.servicebus` for
what was measured there); the partition's loop is then restarted by its supervisor.
"""

from __future__ import annotations

import logging
import threading

from azure.eventhub import CheckpointStore, EventData, EventHubConsumerClient, PartitionContext

from replication.envelope import Envelope
from replication.planning import DeadLetter
from replication.runtime import Backoff, TaskRunner, TaskStatus, describe, failure_level, supervise
from replication.settings import Settings
from replication.topology import EntityRef, NamespaceSpec
from replication.transport.connections import event_hub_client
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT, bounded

from ._conversion import envelope_from_event, salvaged_event
from ._receiving import receive_until_stopped

logger = logging.getLogger(__name__)

RETRY_MIN_SECONDS = 5.0
RETRY_MAX_SECONDS = 300.0


def run_event_hub_source(
    namespace: NamespaceSpec,
    source: EntityRef,
    runner: TaskRunner,
    stop: threading.Event,
    status: TaskStatus,
    *,
    settings: Settings,
    max_batch_size: int = 100,
    checkpoints: CheckpointStore | None = None,
) -> None:
    """Receive batches from every partition of an event hub until ``stop`` is set, one
    supervised consumer thread per partition.

    With ``checkpoints``, each partition's position is saved after every batch the runner
    accepted and a restart resumes there; without, every start reads from the beginning.
    """
    probe = event_hub_client(
        EventHubConsumerClient,
        namespace,
        source.entity,
        settings,
        consumer_group=source.consumer_group or "$Default",
    )

    def read_partition_ids() -> list[str]:
        with probe:
            return [str(partition) for partition in probe.get_partition_ids()]

    # Bounded, and the client closed on the call's own thread: against a namespace that answers
    # nothing the SDK's call never returns, and the task would wait without a word instead of
    # failing and retrying with backoff.
    partitions = bounded(
        read_partition_ids,
        endpoint=namespace.name,
        timeout=DEFAULT_CALL_TIMEOUT.total_seconds(),
        what=f"partition ids of {source.describe()}",
    )
    threads = [
        threading.Thread(
            target=supervise,
            args=(
                f"{runner.task.name} partition {partition}",
                lambda partition=partition: _run_partition(
                    namespace,
                    source,
                    partition,
                    runner,
                    stop,
                    status,
                    settings=settings,
                    max_batch_size=max_batch_size,
                    checkpoints=checkpoints,
                ),
                stop,
                status,
            ),
            name=f"{runner.task.name}-p{partition}",
            daemon=True,
        )
        for partition in partitions
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _run_partition(
    namespace: NamespaceSpec,
    source: EntityRef,
    partition: str,
    runner: TaskRunner,
    stop: threading.Event,
    status: TaskStatus,
    *,
    settings: Settings,
    max_batch_size: int,
    checkpoints: CheckpointStore | None,
) -> None:
    consumer = event_hub_client(
        EventHubConsumerClient,
        namespace,
        source.entity,
        settings,
        consumer_group=source.consumer_group or "$Default",
        checkpoint_store=checkpoints,
    )

    def on_batch(context: PartitionContext, events: list[EventData]) -> None:
        if not events:
            status.touch()
        else:
            _handle_event_batch(context, events, source, runner, stop, status, checkpoints)

    receive_until_stopped(
        consumer,
        consumer.receive_batch,
        {
            "on_event_batch": on_batch,
            "partition_id": partition,
            "max_batch_size": max_batch_size,
            "max_wait_time": 1,
            "starting_position": "-1",
        },
        stop,
        what=f"{source.describe()} partition {partition}",
    )


def _handle_event_batch(
    context: PartitionContext,
    events: list[EventData],
    source: EntityRef,
    runner: TaskRunner,
    stop: threading.Event,
    status: TaskStatus,
    checkpoints: CheckpointStore | None,
) -> None:
    envelopes: list[Envelope] = []
    unreadable: list[DeadLetter] = []
    for event in events:
        try:
            envelopes.append(
                envelope_from_event(event, context.partition_id, source=source.entity_path)
            )
        except Exception as error:  # whatever the event holds, it must not block the partition
            unreadable.append(
                DeadLetter(
                    salvaged_event(event, context.partition_id, source=source.entity_path),
                    getattr(error, "reason", "UnreadableEvent"),
                    describe(error),
                )
            )
    delays = Backoff(RETRY_MIN_SECONDS, RETRY_MAX_SECONDS).delays()
    while not stop.is_set():
        try:
            if unreadable:
                runner.park(unreadable)
                unreadable = []
            outcome = runner.run(envelopes)
        except Exception as error:
            delay = next(delays)
            failures = status.record_failure(error)
            logger.log(
                failure_level(failures),
                "%s: partition %s: batch failed (%d in a row), retry in %.0f s: %s",
                runner.task.name,
                context.partition_id,
                failures,
                delay,
                describe(error),
            )
            stop.wait(delay)
            continue
        if checkpoints is not None:
            context.update_checkpoint(events[-1])
        parked = len(outcome.dead_lettered) + len(events) - len(envelopes)
        status.record(len(events), parked=parked)
        logger.info("%s: %s", runner.task.name, outcome.summary())
        return


__all__ = ["RETRY_MAX_SECONDS", "RETRY_MIN_SECONDS", "run_event_hub_source"]
