"""Stream to queue: turn an Event Hubs stream into Service Bus messages.

Each event becomes one message. The Service Bus side needs a MessageId for duplicate detection
and a session/partition key for ordering; the transport derives them from the event (message-id
system property, else its position ``NAMESPACE/HUB/PARTITION/SEQUENCE``; the event's partition
key) as the official .NET replication library does, except that the library's bare offset
repeats across partitions and is -1 on geo-replicated namespaces (see
``replication.transport.servicebus.position_message_id``). This pattern only applies loop
prevention and stamping.
"""

from __future__ import annotations

from replication.planning import Pattern, PatternOptions

from ._forwarding import forward_every_message


class StreamToQueueOptions(PatternOptions):
    """Stream to queue takes no options."""


PATTERN: Pattern[StreamToQueueOptions] = Pattern(
    name="stream_to_queue",
    summary="forward each event of an event hub as a Service Bus message",
    options_model=StreamToQueueOptions,
    plan=forward_every_message,
    fans_out=True,
)
