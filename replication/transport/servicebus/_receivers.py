"""Service Bus receivers of a queue or subscription, and reading one without settling anything.

Every part of the project that reads a Service Bus entity (the local host's receive loops, the
heartbeat reader, ``status``, ``redrive``, the Function app's re-read of a batch) builds its
receiver here:

- :func:`entity_receiver`: a PEEK_LOCK receiver of a queue, or of a topic's subscription when
  one is named, or of either's dead-letter queue; of one session (or the next available one)
  when asked. Without prefetch (the default), a message is locked only when the caller asks
  for it, so nothing waits locked in a buffer while a batch is being replicated; the local
  host's receive loops ask for a prefetch instead (see ``_loops``: a receiver without prefetch
  has a second thread reading its connection, which can hand messages over out of order; one
  with a prefetch is given ``keep_alive=0``, so it has none).
- :func:`source_receiver`: the same for a task's source (an :class:`EntityRef`).
- :func:`peek_pages`: every message from a sequence number on, page by page, by peeking: no
  lock is taken and no delivery is counted, locked and scheduled messages included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from azure.servicebus import (
    AutoLockRenewer,
    ServiceBusClient,
    ServiceBusReceivedMessage,
    ServiceBusReceiver,
    ServiceBusSessionFilter,
    ServiceBusSubQueue,
)

from replication.topology import EntityRef

from ..deadlines import progress

PEEK_PAGE = 250
"""Messages asked for per peek by :func:`peek_pages`."""


def entity_receiver(
    client: ServiceBusClient,
    entity: str,
    subscription: str | None = None,
    *,
    dead_letter: bool = False,
    wait: float | None = None,
    auto_lock_renewer: AutoLockRenewer | None = None,
    session_id: str | ServiceBusSessionFilter | None = None,
    prefetch: int = 0,
) -> ServiceBusReceiver:
    """A PEEK_LOCK receiver of a queue, or of a topic's subscription when one is named (of its
    dead-letter queue with ``dead_letter``); of the session ``session_id``, or
    ``NEXT_AVAILABLE_SESSION``, when one is given. ``wait``: the SDK's ``max_wait_time``;
    ``prefetch``: its ``prefetch_count`` (none by default).

    A receiver with a prefetch gets ``keep_alive=0``, so that no keep-alive thread reads its
    connection beside the caller's (see ``_loops``). The option must be the receiver's own: the
    client does not pass its ``keep_alive`` on to the receivers it makes (``get_queue_receiver``
    in azure-servicebus 7.15.0's ``_servicebus_client.py``), and a receiver without it starts a
    thread every 30 s. Without prefetch the SDK starts one every 5 s whatever it is given."""
    sub_queue = ServiceBusSubQueue.DEAD_LETTER if dead_letter else None
    options: dict[str, Any] = {"keep_alive": 0} if prefetch else {}
    if subscription is not None:
        return client.get_subscription_receiver(
            entity,
            subscription,
            sub_queue=sub_queue,
            max_wait_time=wait,
            prefetch_count=prefetch,
            auto_lock_renewer=auto_lock_renewer,
            session_id=session_id,
            **options,
        )
    return client.get_queue_receiver(
        entity,
        sub_queue=sub_queue,
        max_wait_time=wait,
        prefetch_count=prefetch,
        auto_lock_renewer=auto_lock_renewer,
        session_id=session_id,
        **options,
    )


def source_receiver(
    client: ServiceBusClient,
    source: EntityRef,
    *,
    wait: float | None,
    auto_lock_renewer: AutoLockRenewer | None = None,
    session_id: str | ServiceBusSessionFilter | None = None,
    prefetch: int = 0,
) -> ServiceBusReceiver:
    """A PEEK_LOCK receiver of a task's Service Bus source (or of its dead-letter queue when
    ``source.dead_letter_queue`` is set), of one session when ``session_id`` is given."""
    return entity_receiver(
        client,
        source.entity,
        source.subscription,
        dead_letter=source.dead_letter_queue,
        wait=wait,
        auto_lock_renewer=auto_lock_renewer,
        session_id=session_id,
        prefetch=prefetch,
    )


def peek_pages(
    receiver: ServiceBusReceiver,
    *,
    start: int = 0,
    limit: int | None = None,
    page_size: int = PEEK_PAGE,
) -> Iterator[list[ServiceBusReceivedMessage]]:
    """The messages of ``receiver``'s entity from sequence number ``start`` on, one page per
    peek, until a peek finds nothing or ``limit`` messages were returned (the pages never add up
    to more). Peeking locks nothing and counts no delivery. Each page is
    :func:`~replication.transport.deadlines.progress` of a call on a lane."""
    seen = 0
    while limit is None or seen < limit:
        count = page_size if limit is None else min(page_size, limit - seen)
        page = receiver.peek_messages(max_message_count=count, sequence_number=start)
        if not page:
            return
        seen += len(page)
        start = max(message.sequence_number or 0 for message in page) + 1
        progress()
        yield page


__all__ = ["PEEK_PAGE", "entity_receiver", "peek_pages", "source_receiver"]
