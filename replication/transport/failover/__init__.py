"""The SDK and Blob Storage side of :mod:`replication.failover` (the decisions live there).

- ``_channels``: one namespace's sender or receiver for the failover publishers and consumers
  (Service Bus and Event Hubs, sync and asyncio), and the facts the skip helper reads from a
  received message;
- ``_blobs``: :class:`BlobFailoverStore`, the container of binding documents (read with
  ``If-None-Match``, switched under a blob lease) and consumer states (snapshot plus append
  journal);
- ``_event_hubs``: partition readers with the application's checkpoint store (a translated start
  time where a partition has no checkpoint), and the removal of stale checkpoints.

Every SDK call here has a deadline (:mod:`replication.transport.deadlines`): the channels' and
readers' ``call_timeout`` (10 s), the store's ``timeout`` (10 s, with the storage SDK's own
options); past it a call counts as unreachable, never as a hang.
"""

from ._blobs import (
    CONTAINER_SETTING,
    DEFAULT_CONTAINER,
    DEFAULT_STORE_TIMEOUT,
    LEASE_SECONDS,
    STORAGE_SETTINGS,
    BindingLease,
    BlobFailoverStore,
    FailoverStoreError,
    SwitchInProgressError,
    blob_client_options,
    failover_store_from_settings,
)
from ._channels import (
    CLIENT_RETRIES,
    DEFAULT_CALL_SECONDS,
    AsyncEventHubPublishChannel,
    AsyncServiceBusConsumeChannel,
    AsyncServiceBusPublishChannel,
    EventHubPublishChannel,
    MessageFacts,
    OutgoingMessage,
    ReceivedMessage,
    ServiceBusConsumeChannel,
    ServiceBusPublishChannel,
    ensure_message_id,
    event_facts,
    message_facts,
    new_message,
)
from ._event_hubs import (
    BatchHandler,
    ConsumerCheckpoints,
    LastEnqueued,
    PartitionReaders,
    ReceivedEvent,
    checkpoint_store,
    clear_checkpoints,
    host_name,
    partition_ids,
)

__all__ = [
    "CLIENT_RETRIES",
    "CONTAINER_SETTING",
    "DEFAULT_CALL_SECONDS",
    "DEFAULT_CONTAINER",
    "DEFAULT_STORE_TIMEOUT",
    "LEASE_SECONDS",
    "STORAGE_SETTINGS",
    "AsyncEventHubPublishChannel",
    "AsyncServiceBusConsumeChannel",
    "AsyncServiceBusPublishChannel",
    "BatchHandler",
    "BindingLease",
    "BlobFailoverStore",
    "ConsumerCheckpoints",
    "EventHubPublishChannel",
    "FailoverStoreError",
    "LastEnqueued",
    "MessageFacts",
    "OutgoingMessage",
    "PartitionReaders",
    "ReceivedEvent",
    "ReceivedMessage",
    "ServiceBusConsumeChannel",
    "ServiceBusPublishChannel",
    "SwitchInProgressError",
    "blob_client_options",
    "checkpoint_store",
    "clear_checkpoints",
    "ensure_message_id",
    "event_facts",
    "failover_store_from_settings",
    "host_name",
    "message_facts",
    "new_message",
    "partition_ids",
]
