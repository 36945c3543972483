"""The Event Hubs side of :mod:`replication.failover`: partition readers and their checkpoints.

- :class:`PartitionReaders` runs one ``receive_batch`` per partition of one event hub in one
  namespace (as the local host does), with the application's checkpoint store: each partition
  resumes at its checkpoint, or at the beginning when it has none. Every batch, and every empty
  wait, goes to the consumer's handler together with the partition's last enqueued event (the
  receiver runtime metric), and the checkpoint is updated at the event the handler returns,
  *after* the handler returned (so after the consumer persisted its log). A partition without a
  checkpoint starts at ``start`` (a time, see :mod:`replication.failover._checkpoints`), or at
  the beginning.
- :func:`clear_checkpoints` removes a consumer group's checkpoints in one namespace (stale ones,
  from the consumer's previous time there, that a translated start replaces).
- :func:`checkpoint_store`: the SDK's ``BlobCheckpointStore`` on a container (created if
  missing).

Checkpoints are keyed by the client's host name, port included (what the SDK's event processor
uses), so two namespaces never share positions.

Deadlines (:mod:`replication.transport.deadlines`): reading the partition ids is bounded by
``call_timeout``; a partition that hears nothing (no batch, no empty wait, no error) for
``SILENCE_DEADLINE`` fails the readers; closing the readers never waits longer than
``call_timeout`` for a namespace that stopped answering (their threads end when the SDK gives
up); the checkpoint store's requests carry the failover store's timeouts
(:func:`~replication.transport.failover._blobs.blob_client_options`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from azure.core.exceptions import AzureError, ResourceExistsError
from azure.eventhub import EventData, EventHubConsumerClient
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
from azure.storage.blob import ContainerClient

from replication.exceptions import ConfigurationError
from replication.runtime import describe

from ..connections import NamespaceAccess
from ..deadlines import SILENCE_DEADLINE, Hearing, bounded
from ._blobs import DEFAULT_STORE_TIMEOUT, blob_client_options
from ._channels import CLIENT_RETRIES, DEFAULT_CALL_SECONDS, endpoint_of, event_hub_client

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class LastEnqueued:
    """A partition's newest event when a batch was received (the receiver runtime metric)."""

    sequence: int
    offset: str
    enqueued_time: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerCheckpoints:
    """The SDK's blob checkpoint store of a consumer and the container it writes to."""

    store: BlobCheckpointStore
    container: ContainerClient


ReceivedEvent = EventData
"""What an Event Hubs failover consumer hands the application."""

BatchHandler = Callable[[str, list[EventData], LastEnqueued | None], EventData | None]
"""(partition, events, last enqueued) -> the event to checkpoint at, or None."""


def checkpoint_store(
    connection_string: str, container: str, *, timeout: float = DEFAULT_STORE_TIMEOUT
) -> ConsumerCheckpoints:
    """The SDK's blob checkpoint store on ``container`` (created when missing); each request
    bounded as the failover store's (``timeout``)."""
    try:
        client = ContainerClient.from_connection_string(
            connection_string, container, **blob_client_options(timeout)
        )
    except ValueError as error:
        raise ConfigurationError(f"not a storage connection string: {error}") from None
    try:
        client.create_container()
    except ResourceExistsError:
        pass
    except AzureError as error:
        raise ConfigurationError(
            f"checkpoint container {container!r}: {describe(error)}"
        ) from error
    return ConsumerCheckpoints(
        BlobCheckpointStore(client.url, container, container_client=client), client
    )


def _consumer(access: str | NamespaceAccess, hub: str, group: str, **options: Any) -> Any:
    return event_hub_client(
        EventHubConsumerClient, access, hub, consumer_group=group, **CLIENT_RETRIES, **options
    )


def host_name(access: str | NamespaceAccess, hub: str, group: str) -> str:
    """The host name (with port) the event processor keys this namespace's checkpoints by."""
    client = _consumer(access, hub, group)
    try:
        return str(client._address.hostname)
    finally:
        client.close()


def partition_ids(
    access: str | NamespaceAccess, hub: str, group: str, *, timeout: float = DEFAULT_CALL_SECONDS
) -> list[str]:
    """The partition ids of the event hub (raises the SDK's error when unreachable, and
    :class:`~replication.exceptions.CallTimeoutError` when no answer comes within ``timeout``).
    """
    client = _consumer(access, hub, group)

    def read() -> list[str]:
        with client:
            return [str(p) for p in client.get_partition_ids()]

    return bounded(read, endpoint=endpoint_of(client), timeout=timeout, what=f"{hub} partitions")


class PartitionReaders:
    """Receives every partition of one event hub of one namespace (see the module docstring);
    stops on :meth:`close`, or when a partition's receive fails (:attr:`error`)."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        hub: str,
        group: str,
        checkpoints: ConsumerCheckpoints,
        handler: BatchHandler,
        *,
        start: datetime | None = None,
        max_batch_size: int = 100,
        max_wait_time: float = 1.0,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self._clients: list[Any] = []
        self._threads: list[threading.Thread] = []
        self._hearings: dict[str, Hearing] = {}
        silence = max(SILENCE_DEADLINE.total_seconds(), 3 * max_wait_time)
        self.error: BaseException | None = None
        self._handler = handler
        self._call_timeout = call_timeout
        self._start: int | str | datetime = "-1" if start is None else start
        for partition in partition_ids(access, hub, group, timeout=call_timeout):
            client = _consumer(access, hub, group, checkpoint_store=checkpoints.store)
            self._hearings[partition] = Hearing(silence)
            thread = threading.Thread(
                target=self._run,
                args=(client, partition, self._hearings[partition], max_batch_size, max_wait_time),
                name=f"failover-{hub}-p{partition}",
                daemon=True,
            )
            self._clients.append(client)
            self._threads.append(thread)
        for thread in self._threads:
            thread.start()

    def _run(
        self,
        client: Any,
        partition: str,
        hearing: Hearing,
        max_batch_size: int,
        max_wait_time: float,
    ) -> None:
        def on_batch(context: Any, events: list[EventData]) -> None:
            last = _last_enqueued(context.last_enqueued_event_properties)
            checkpoint_at = self._handler(partition, events, last)
            if checkpoint_at is not None:
                context.update_checkpoint(checkpoint_at)

        def on_error(_context: Any, error: Exception) -> None:
            self.error = self.error or error

        try:
            client.receive_batch(
                on_event_batch=hearing.wrap(on_batch),
                on_error=hearing.wrap(on_error),
                partition_id=partition,
                max_batch_size=max_batch_size,
                max_wait_time=max_wait_time,
                starting_position=self._start,
                starting_position_inclusive=True,
                track_last_enqueued_event_properties=True,
            )
        except Exception as error:
            self.error = self.error or error

    @property
    def alive(self) -> bool:
        """No partition failed, ended or went silent: a receive that hears nothing (no batch,
        no empty wait, no error) for ``SILENCE_DEADLINE`` sets :attr:`error` (the SDK reports
        nothing when the namespace accepts connections and answers nothing, and before its
        first claim it loops without waiting; see :mod:`replication.transport.eventhubs`)."""
        for partition, hearing in self._hearings.items():
            silence = hearing.overdue(f"partition {partition}")
            if self.error is None and silence is not None:
                self.error = silence
        return self.error is None and all(thread.is_alive() for thread in self._threads)

    def close(self) -> None:
        """Close every reader, waiting at most ``call_timeout`` in all: a client whose
        namespace stopped answering cannot close before its call returns (the SDK holds the
        socket), so it is left to close then, in a thread of its own."""
        closers = [
            threading.Thread(target=_close, args=(client,), name="close-reader", daemon=True)
            for client in self._clients
        ]
        for closer in closers:
            closer.start()
        deadline = time.monotonic() + self._call_timeout
        for thread in [*closers, *self._threads]:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


def _close(client: Any) -> None:
    try:
        client.close()
    except Exception as error:
        logger.debug("closing a partition reader: %s", describe(error))


def _last_enqueued(properties: dict[str, Any] | None) -> LastEnqueued | None:
    if not properties or properties.get("sequence_number") is None:
        return None
    return LastEnqueued(
        int(properties["sequence_number"]),
        str(properties.get("offset")),
        properties.get("enqueued_time"),
    )


def clear_checkpoints(
    checkpoints: ConsumerCheckpoints, access: str | NamespaceAccess, hub: str, group: str
) -> int:
    """Delete the consumer group's checkpoints of ``hub`` in this namespace (the SDK's blob
    names, ``<host>/<hub>/<group>/checkpoint/<partition>`` in lower case, from
    ``BlobCheckpointStore.update_checkpoint``); returns how many there were."""
    prefix = f"{host_name(access, hub, group)}/{hub}/{group}/checkpoint/".lower()
    names = [blob.name for blob in checkpoints.container.list_blobs(name_starts_with=prefix)]
    for name in names:
        checkpoints.container.delete_blob(name)
    return len(names)


__all__ = [
    "BatchHandler",
    "ConsumerCheckpoints",
    "LastEnqueued",
    "PartitionReaders",
    "ReceivedEvent",
    "checkpoint_store",
    "clear_checkpoints",
    "host_name",
    "partition_ids",
]
