"""Service Bus adapters on ``azure-servicebus``: message conversion, receivers and peeking.

- ``_conversion``: :class:`~replication.envelope.Envelope` from a received message
  (:func:`envelope_from_received`) and to a message to send (:func:`to_servicebus_message`),
  with the replica's MessageId (:func:`replica_ids`);
- ``_receivers``: the one receiver factory of a queue, subscription or dead-letter queue
  (:func:`entity_receiver`, :func:`source_receiver`) and the one scan by peeking
  (:func:`peek_pages`);
- ``_entity``: :class:`EntityReader`, one entity read message by message for ``redrive``
  (a scan by peeking, then lock-receiving and settling one by one);
- ``_loops``: the local host's receive loops (:func:`run_servicebus_source`,
  :func:`run_servicebus_session_source`) with their one settle step, lock renewal
  (:class:`LockKeeper`, on one :class:`LockRenewer` thread per loop), the isolation of a
  message the SDK cannot decode, receivers read by one thread (:func:`loop_receiver`) and the
  order guard of a session (:class:`SessionOrder`);
- ``_heartbeats``: the heartbeat reader of a receiving namespace
  (:func:`run_heartbeat_reader`) and the peek of its newest unread heartbeats;
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
from ._heartbeats import PEEK_LIMIT, peek_latest_heartbeats, reader_source, run_heartbeat_reader
from ._loops import (
    CONCURRENT_SESSIONS,
    SESSION_IDLE_SECONDS,
    Isolation,
    LockKeeper,
    LockRenewer,
    SessionOrder,
    hold_stopped_session,
    loop_receiver,
    overdue_after,
    run_servicebus_session_source,
    run_servicebus_source,
)
from ._peek import MAX_PEEK, ServiceBusPeeker
from ._receivers import PEEK_PAGE, entity_receiver, peek_pages, source_receiver

__all__ = [
    "CONCURRENT_SESSIONS",
    "LOCK_RENEWAL_SECONDS",
    "MAX_MESSAGE_ID_LENGTH",
    "MAX_PEEK",
    "PEEK_LIMIT",
    "PEEK_PAGE",
    "SCAN_PAGE",
    "SESSION_IDLE_SECONDS",
    "EntityReader",
    "Isolation",
    "LockKeeper",
    "LockRenewer",
    "Locked",
    "LockingReceiver",
    "Peeked",
    "ServiceBusPeeker",
    "SessionOrder",
    "entity_receiver",
    "envelope_from_received",
    "hold_stopped_session",
    "loop_receiver",
    "overdue_after",
    "peek_latest_heartbeats",
    "peek_pages",
    "position_message_id",
    "reader_source",
    "replica_ids",
    "run_heartbeat_reader",
    "run_servicebus_session_source",
    "run_servicebus_source",
    "source_receiver",
    "to_servicebus_message",
]
