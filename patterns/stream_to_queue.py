"""Stream to queue: turn an Event Hubs stream into Service Bus messages.

Each event becomes one message. The Service Bus side needs a MessageId for duplicate detection
and a session/partition key for ordering; the transport derives them from the event (message-id
system property, else its position ``PARTITION:OFFSET``; the event's partition key) as the
official .NET replication library does, except that the library's bare offset repeats across
partitions (see ``replication.transport.servicebus``). This pattern only applies loop prevention
and stamping.
"""

from __future__ import annotations

from collections.abc import Sequence

from replication.envelope import Envelope

from ._base import Decision, Pattern, PatternOptions, TaskContext, no_subscription_rule
from ._forwarding import forward_each


class StreamToQueueOptions(PatternOptions):
    """Stream to queue takes no options."""


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: StreamToQueueOptions
) -> list[Decision]:
    return forward_each(batch, context)


PATTERN = Pattern(
    name="stream_to_queue",
    summary="forward each event of an event hub as a Service Bus message",
    options_model=StreamToQueueOptions,
    plan=plan,
    subscription_rule=no_subscription_rule,
)
