"""Message replication and cross-region federation for Azure Service Bus and Event Hubs.

The package root exports only the bottom layer, which everything else (the patterns included)
builds on: :class:`Envelope`, the exception hierarchy and the loop check. Beside it, the root
holds the other leaf value modules (``properties``, ``rules``, ``values``, ``durations``,
``exit_codes``, ``loops``, ``planning``: the pattern contract; ``transforms``: user
transforms' contract) and ``settings``, the app settings read once at start. Each
feature is one package, listed here in dependency order (each imports only those above it;
``tests/unit/test_architecture.py`` checks it):

- ``replication.sql``: the Service Bus SQL filter grammar;
- ``replication.topology``: the validated topology file (``load_topology``);
- ``replication.render``: configuration rendered from the topology (Bicep parameters, az CLI,
  the emulator's config, app settings);
- ``replication.capacity``: the capacity plan of ``plan --rate`` against each tier's limits;
- ``replication.telemetry``: metrics and traces through the OpenTelemetry API, and the SDK
  setup of the applications;
- ``replication.runtime``: a task's pattern run over a batch (``TaskRunner``), behind the
  ``TargetSender`` seam;
- ``replication.transport``: the only code that imports the Azure SDKs (``servicebus/`` and
  ``eventhubs/`` adapters, senders, receive loops, connections, error translation);
- ``replication.operations``: the operator commands' logic (``status``, ``redrive``);
- ``replication.failover``: the failover clients applications use, and ``failover`` /
  ``failback`` (their SDK side is ``transport/failover``);
- ``replication.heartbeats``: heartbeat messages, their ages and gauge, and each host's wiring;
- ``replication.hosts``: the two ways a task is hosted, ``hosts.functions`` (the Function app,
  ``build_app``) and ``hosts.local`` (``LocalHost``, behind ``python -m replication run``);
- ``replication.showcase`` and ``replication.drill``: what ``demo`` and ``drill`` run;
- ``replication.cli``: the command line.

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

__version__ = "0.1.0"
"""The distribution's version (``pyproject.toml`` reads it from here; ``replication --version``)."""

__all__ = [
    "ConfigurationError",
    "Envelope",
    "MessageRejectedError",
    "PermanentForwardError",
    "ReplicationError",
    "TransientForwardError",
    "should_forward",
]
