"""The protocol between the AMQP connection code and a namespace's broker.

The connection code (:mod:`emulator._connection`) drives python-qpid-proton's engine: sockets,
frames, sessions, the ``$cbs`` node, the plumbing of management requests and replies, the
checks every broker shares (the message size limit). What a link, a transfer, a settlement or
a management request *means* depends on the broker behind the namespace, and that is a
:class:`BrokerHandler`'s job: one per broker (``_servicebus_handler.ServiceBusHandler``,
``_eventhubs_handler.EventHubsHandler``), each a protocol layer over its
broker's state (:mod:`emulator._servicebus`, :mod:`emulator._eventhubs`), which knows nothing
of AMQP. That is the shape of qpid-proton's example broker (one handler method per engine
event) and of localstack's providers over their models.

A handler serves one namespace, every connection to it; what it keeps per link it keeps on
the link (:func:`emulator._links.keep_state`). The connection code calls it from the single
emulator thread, never concurrently.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from proton import Delivery, Link


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A transfer the broker does not take: the error its ``rejected`` outcome carries."""

    condition: str
    description: str


@dataclasses.dataclass(frozen=True)
class ManagementReply:
    """The answer to a ``$management`` request: its status, body and other application
    properties (the connection adds the status under the handler's ``status_key`` and
    correlates the reply with the request)."""

    status: int
    body: Any = None
    properties: dict[str, Any] = dataclasses.field(default_factory=dict)
    stores_messages: bool = False
    """The request stored or removed messages (scheduling): saved, with ``--data-dir``,
    before the reply leaves, as sends are."""


class BrokerHandler(Protocol):
    """What the connection code asks of a broker. Paths are entity paths (``queue``,
    ``topic/Subscriptions/sub``, ``hub/ConsumerGroups/g/Partitions/0``), never ``$cbs`` or a
    ``$management`` node, which the connection code serves."""

    status_key: str
    """The application property that carries a management reply's status: Service Bus writes
    ``statusCode``, Event Hubs ``status-code``."""

    max_message_size: int
    """Transfers larger than this are rejected before the handler sees them."""

    def open_link(self, link: Link, path: str) -> None:
        """The peer attached ``link`` to ``path`` (its terminus and settle modes are already
        copied): open it (:func:`emulator._links.open_for_transfers` for a link the peer
        sends on), refuse it (:func:`emulator._links.refuse`), or leave it unanswered for
        :meth:`pump` to answer later."""
        ...

    def transfer(self, path: str, data: bytes) -> Refusal | None:
        """A complete message (or batch) the peer sent to ``path``: store it, or refuse it
        whole."""
        ...

    def pump(self, link: Link) -> None:
        """Move a link the emulator sends on forward: answer its attach once that can be done,
        close it when the broker took it away, deliver while it has credit. Called when the
        peer gives credit, after every batch of engine events and on every sweep, for every
        sender link of the connection that the emulator has not closed."""
        ...

    def disposition(self, delivery: Delivery) -> None:
        """The peer updated or settled ``delivery``, one the emulator sent: apply the
        outcome and settle it."""
        ...

    def management(self, entity: str, properties: dict[str, Any], body: Any) -> ManagementReply:
        """A request to ``<entity>/$management``: its application properties (``operation``
        and the like, keys as text) and its body."""
        ...

    def link_closed(self, link: Link) -> None:
        """The peer detached ``link``, or its connection ended: release what it held."""
        ...

    def sweep(self) -> None:
        """Time passed: expire what has expired (the loop calls this about ten times a
        second)."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """Everything the namespace holds, as JSON-ready data (``--data-dir``)."""
        ...

    def restore(self, state: dict[str, Any], source: str) -> None:
        """Load what :meth:`snapshot` wrote; ``source`` names the file for warnings."""
        ...


__all__ = ["BrokerHandler", "ManagementReply", "Refusal"]
