"""Which handler serves each namespace of a config document.

A Service Bus namespace (``UserConfig.Namespaces``) is served by
:class:`emulator._servicebus_handler.ServiceBusHandler`, an Event Hubs one
(``UserConfig.NamespaceConfig``) by :class:`emulator._eventhubs_handler.EventHubsHandler`:
the only place that knows which broker is which. Everything after it sees a
:class:`emulator._handler.BrokerHandler`.
"""

from __future__ import annotations

from typing import Any

from ._config import eventhubs_namespaces, servicebus_namespaces
from ._eventhubs_handler import EventHubsHandler
from ._handler import BrokerHandler
from ._servicebus_handler import ServiceBusHandler


def namespace_handlers(document: dict[str, Any]) -> list[tuple[str, BrokerHandler, int]]:
    """(name, handler, port or 0) for each namespace of a loaded config document, Service Bus
    ones first; a bad entry raises ``ConfigurationError`` naming its JSON path."""
    servicebus: list[tuple[str, BrokerHandler, int]] = [
        (name, ServiceBusHandler(broker), port)
        for name, broker, port in servicebus_namespaces(document)
    ]
    eventhubs: list[tuple[str, BrokerHandler, int]] = [
        (name, EventHubsHandler(broker), port)
        for name, broker, port in eventhubs_namespaces(document)
    ]
    return servicebus + eventhubs


__all__ = ["namespace_handlers"]
