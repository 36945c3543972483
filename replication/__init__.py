"""Message replication and cross-region federation for Azure Service Bus and Event Hubs.

The public surface most users need:

- :class:`Envelope` (``replication.envelope``): the neutral message type.
- :func:`load_topology` (``replication.topology``): the validated topology file.
- ``replication.properties`` / ``replication.loops``: replication properties and loop prevention.
- ``replication.transport``: the only code that talks to the Azure SDKs.
"""

from replication.envelope import Envelope
from replication.exceptions import (
    ConfigurationError,
    MessageRejectedError,
    PermanentForwardError,
    ReplicationError,
    TransientForwardError,
)
from replication.loops import should_forward
from replication.topology import Topology, load_topology

__all__ = [
    "ConfigurationError",
    "Envelope",
    "MessageRejectedError",
    "PermanentForwardError",
    "ReplicationError",
    "Topology",
    "TransientForwardError",
    "load_topology",
    "should_forward",
]
