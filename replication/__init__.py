"""Message replication and cross-region federation for Azure Service Bus and Event Hubs.

The package root exports only the bottom layer, which everything else (the patterns included)
builds on: :class:`Envelope`, the exception hierarchy and the loop check. The upper layers are
imported from their modules, in dependency order:

- ``replication.topology``: the validated topology file (``load_topology``);
- ``replication.runtime``: a task's pattern executed over a batch;
- ``replication.transport``: the only code that talks to the Azure SDKs;
- ``replication.telemetry`` (OpenTelemetry API instruments, bottom layer) and
  ``replication.telemetry_setup`` (``configure_local_telemetry`` for local runs, Azure Monitor
  for the Function app);
- ``replication.functions_app`` / ``replication.local_host`` / ``replication.cli``: the Function
  app, the local host and the command line.

Importing the root therefore never imports the patterns, the topology or an SDK.
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

__all__ = [
    "ConfigurationError",
    "Envelope",
    "MessageRejectedError",
    "PermanentForwardError",
    "ReplicationError",
    "TransientForwardError",
    "should_forward",
]
