"""Event Hubs adapters on ``azure-eventhub``: event conversion and local checkpoints.

- ``_conversion``: :class:`~replication.envelope.Envelope` from a received event
  (:func:`envelope_from_event`), what a parked copy keeps of one that cannot be converted
  (:func:`salvaged_event`), and to an event to send (:func:`to_event_data`);
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

__all__ = [
    "API_VERSION",
    "CONTAINER_SETTING",
    "DEFAULT_CONTAINER",
    "STORAGE_SETTING",
    "checkpoint_store",
    "envelope_from_event",
    "salvaged_event",
    "to_event_data",
]
