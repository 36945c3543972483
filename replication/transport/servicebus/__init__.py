"""Service Bus adapters on ``azure-servicebus``: message conversion and peeking.

- ``_conversion``: :class:`~replication.envelope.Envelope` from a received message
  (:func:`envelope_from_received`) and to a message to send (:func:`to_servicebus_message`),
  with the replica's MessageId (:func:`replica_ids`);
- ``_peek``: :class:`ServiceBusPeeker`, re-reading a source's messages by sequence number
  without locking them.
"""

from ._conversion import (
    MAX_MESSAGE_ID_LENGTH,
    envelope_from_received,
    position_message_id,
    replica_ids,
    to_servicebus_message,
)
from ._peek import MAX_PEEK, ServiceBusPeeker

__all__ = [
    "MAX_MESSAGE_ID_LENGTH",
    "MAX_PEEK",
    "ServiceBusPeeker",
    "envelope_from_received",
    "position_message_id",
    "replica_ids",
    "to_servicebus_message",
]
