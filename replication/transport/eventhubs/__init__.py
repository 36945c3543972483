"""Event Hubs adapters on ``azure-eventhub``: event conversion and local checkpoints.

- ``_conversion``: :class:`~replication.envelope.Envelope` from a received event
  (:func:`envelope_from_event`), what a parked copy keeps of one that cannot be converted
  (:func:`salvaged_event`), and to an event to send (:func:`to_event_data`);
- ``_loops``: the local host's receive loops, one consumer per partition
  (:func:`run_event_hub_source`), checkpointing after each batch the runner accepted;
- ``_reread``: :class:`EventReader`, events read back by partition and sequence number or
  time (``redrive`` restores an event whose parked copy is only a notice; ``status`` reads the
  oldest event a task has not replicated);
- ``_heartbeats``: the heartbeat reader of a receiving Event Hubs namespace
  (:func:`run_heartbeat_reader`) and ``status``'s read of its newest heartbeats
  (:func:`read_latest_heartbeats`);
- ``_receiving``: the SDK's blocking receive run until a stop, its errors raised for
  :func:`~replication.runtime.supervise` (what ``_loops`` and ``_heartbeats`` share);
- ``_checkpoints``: :func:`checkpoint_store`, the blob checkpoint store of local runs, in the
  storage account ``AzureWebJobsStorage`` names.
"""

from ._checkpoints import (
    API_VERSION,
    CONTAINER_SETTING,
    DEFAULT_CONTAINER,
    STORAGE_SETTING,
    checkpoint_store,
)
from ._conversion import envelope_from_event, salvaged_event, to_event_data
from ._heartbeats import read_latest_heartbeats, run_heartbeat_reader
from ._loops import RETRY_MAX_SECONDS, RETRY_MIN_SECONDS, run_event_hub_source
from ._reread import REREAD_CONSUMER_GROUP, EventReader, ReadEvent

__all__ = [
    "API_VERSION",
    "CONTAINER_SETTING",
    "DEFAULT_CONTAINER",
    "REREAD_CONSUMER_GROUP",
    "RETRY_MAX_SECONDS",
    "RETRY_MIN_SECONDS",
    "STORAGE_SETTING",
    "EventReader",
    "ReadEvent",
    "checkpoint_store",
    "envelope_from_event",
    "read_latest_heartbeats",
    "run_event_hub_source",
    "run_heartbeat_reader",
    "salvaged_event",
    "to_event_data",
]
