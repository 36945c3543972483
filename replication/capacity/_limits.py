"""What each tier of Service Bus and Event Hubs allows, as Microsoft publishes it.

- Service Bus Basic and Standard: credit-based throttling, 1,000 credits per second per
  namespace; every send, receive and peek costs one credit per message, and every filter
  evaluation of a message sent to a topic costs one more
  (https://learn.microsoft.com/azure/service-bus-messaging/service-bus-throttling). The page
  describes the Standard tier; Basic runs on the same shared infrastructure, and this plan holds
  it to the same limit.
- Service Bus Premium: dedicated messaging units, throttled on CPU and memory; Microsoft
  publishes no messages per second per messaging unit (same page, "Throttling in Premium
  tier"), so the plan reports the operations and no verdict.
- Event Hubs Basic and Standard: a throughput unit takes up to 1 MB/s or 1,000 events/s in,
  whichever comes first, and gives up to 2 MB/s or 4,096 events/s out
  (https://learn.microsoft.com/azure/event-hubs/event-hubs-scalability#throughput-units). The
  namespace's ``sku.capacity`` takes 1 to 20 throughput units through ARM
  (``Microsoft.EventHub/namespaces``; more by a support request).
- Event Hubs Premium: processing units, whose throughput depends on the workload; Microsoft
  publishes ranges, not a limit (https://learn.microsoft.com/azure/event-hubs/event-hubs-scalability#processing-units),
  so again no verdict.

"MB" is taken as 1,000,000 bytes, which errs towards one throughput unit more.
"""

from __future__ import annotations

import math

SERVICEBUS_CREDITS_PER_SECOND = 1_000
"""Credits per second of a Basic or Standard Service Bus namespace."""

THROUGHPUT_UNIT_INGRESS_EVENTS = 1_000
THROUGHPUT_UNIT_INGRESS_BYTES = 1_000_000
THROUGHPUT_UNIT_EGRESS_EVENTS = 4_096
THROUGHPUT_UNIT_EGRESS_BYTES = 2_000_000
MAX_THROUGHPUT_UNITS = 20
"""The largest ``sku.capacity`` ARM accepts for a Basic or Standard Event Hubs namespace."""

SERVICEBUS_LIMIT_SOURCE = (
    "https://learn.microsoft.com/azure/service-bus-messaging/service-bus-throttling"
)
EVENTHUBS_LIMIT_SOURCE = (
    "https://learn.microsoft.com/azure/event-hubs/event-hubs-scalability#throughput-units"
)


def throughput_units(
    ingress_events: float, ingress_bytes: float, egress_events: float, egress_bytes: float
) -> int:
    """Throughput units an Event Hubs namespace needs for these per-second figures (at least
    one: a namespace cannot have fewer)."""
    needed = max(
        ingress_events / THROUGHPUT_UNIT_INGRESS_EVENTS,
        ingress_bytes / THROUGHPUT_UNIT_INGRESS_BYTES,
        egress_events / THROUGHPUT_UNIT_EGRESS_EVENTS,
        egress_bytes / THROUGHPUT_UNIT_EGRESS_BYTES,
    )
    # A figure that is a whole number of units up to float noise needs exactly that many.
    return max(1, math.ceil(round(needed, 9)))


__all__ = [
    "EVENTHUBS_LIMIT_SOURCE",
    "MAX_THROUGHPUT_UNITS",
    "SERVICEBUS_CREDITS_PER_SECOND",
    "SERVICEBUS_LIMIT_SOURCE",
    "THROUGHPUT_UNIT_EGRESS_BYTES",
    "THROUGHPUT_UNIT_EGRESS_EVENTS",
    "THROUGHPUT_UNIT_INGRESS_BYTES",
    "THROUGHPUT_UNIT_INGRESS_EVENTS",
    "throughput_units",
]
