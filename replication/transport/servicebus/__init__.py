"""Service Bus adapters on ``azure-servicebus``: message conversion, receivers and peeking.

- ``_conversion``: :class:`~replication.envelope.Envelope` from a received message
  (:func:`envelope_from_received`) and to a message to send (:func:`to_servicebus_message`),
  with the replica's MessageId (:func:`replica_ids`);
- ``_receivers``: the one receiver factory of a queue, subscription or dead-letter queue
  (:func:`entity_receiver`, :func:`source_receiver`) and the one scan by peeking
  (:func:`peek_pages`);
- ``_entity``: :class:`EntityReader`, one entity read message by message for ``redrive``
  (a scan by peeking, then lock-receiving and settling one by one);
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
from ._entity import LOCK_RENEWAL_SECONDS, SCAN_PAGE, EntityReader, Locked, LockingReceiver, Peeked
from ._peek import MAX_PEEK, ServiceBusPeeker
from ._receivers import PEEK_PAGE, entity_receiver, peek_pages, source_receiver

__all__ = [
    "LOCK_RENEWAL_SECONDS",
    "MAX_MESSAGE_ID_LENGTH",
    "MAX_PEEK",
    "PEEK_PAGE",
    "SCAN_PAGE",
    "EntityReader",
    "Locked",
    "LockingReceiver",
    "Peeked",
    "ServiceBusPeeker",
    "entity_receiver",
    "envelope_from_received",
    "peek_pages",
    "position_message_id",
    "replica_ids",
    "source_receiver",
    "to_servicebus_message",
]
