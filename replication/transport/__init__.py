"""Everything that imports the Azure SDKs: converters, senders, receive loops and error translation.

No other package of this project imports ``azure.servicebus``, ``azure.eventhub`` or the other
Azure client libraries (``tests/unit/test_architecture.py``); patterns stay pure and testable
without a network.

- :mod:`replication.transport.servicebus` and :mod:`replication.transport.eventhubs`: each
  broker's message conversion; Service Bus receivers and peeking, Event Hubs checkpoints;
- ``senders``: the SDK :class:`~replication.runtime.TargetSender` implementations and the
  per-namespace client cache (``SenderFactory``);
- ``receivers``: the receive loops of the local host; ``heartbeats``: the heartbeat reader;
- ``redrive``: what ``python -m replication redrive`` does; ``inspection``: reading what
  sources hold without settling anything, for ``status`` (:mod:`replication.operations`);
- ``connections`` (how a namespace is reached), ``errors`` (SDK errors to
  :mod:`replication.exceptions`), ``logs`` (quieting the SDKs' per-link logging), and the
  shared ``_common`` / ``_properties`` converters.

This package re-exports nothing: importing one adapter must not import both SDKs.
"""
